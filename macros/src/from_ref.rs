//! `#[derive(FromRef)]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields};

pub(crate) fn expand(item: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(item)?;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(FromRef)] works on structs: each field becomes a part handlers can ask \
             for with `State<FieldType>`",
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(FromRef)] does not support generic state structs; implement `FromRef` by \
             hand",
        ));
    }
    let ident = &input.ident;
    let mut impls = Vec::new();
    let fields: Vec<_> = match &data.fields {
        Fields::Named(f) => f.named.iter().collect(),
        Fields::Unnamed(f) => f.unnamed.iter().collect(),
        Fields::Unit => Vec::new(),
    };
    for (i, field) in fields.into_iter().enumerate() {
        let mut skip = false;
        for attr in &field.attrs {
            if attr.path().is_ident("from_ref") {
                attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("skip") {
                        skip = true;
                        Ok(())
                    } else {
                        Err(meta.error("unknown `from_ref` option; the only one is `skip`"))
                    }
                })?;
            }
        }
        if skip {
            continue;
        }
        let ty = &field.ty;
        let access = match &field.ident {
            Some(name) => quote!(#name),
            None => {
                let index = syn::Index::from(i);
                quote!(#index)
            }
        };
        impls.push(quote! {
            impl ::ruststream::FromRef<#ident> for #ty {
                fn from_ref(state: &#ident) -> Self {
                    ::core::clone::Clone::clone(&state.#access)
                }
            }
        });
    }
    Ok(quote!(#(#impls)*))
}

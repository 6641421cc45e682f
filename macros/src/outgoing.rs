//! `#[derive(Outgoing)]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{DeriveInput, LitStr};

pub(crate) fn expand(item: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(item)?;
    let mut topic: Option<LitStr> = None;
    let mut codec: Option<LitStr> = None;
    let mut compression: Option<LitStr> = None;
    for attr in &input.attrs {
        if !attr.path().is_ident("outgoing") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                topic = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("codec") {
                codec = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("compression") {
                compression = Some(meta.value()?.parse()?);
                Ok(())
            } else {
                Err(meta.error(
                    "unknown `outgoing` option; the options are `name = \"topic\"`, \
                     `codec = \"json\" | \"msgpack\"` and `compression = \"none\" | \"lz4\" | \
                     \"zlib\" | \"zstd\" | \"snappy\"`",
                ))
            }
        })?;
    }
    let Some(topic) = topic else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(Outgoing)] needs the topic the type is published to: add \
             `#[outgoing(name = \"topic\")]`",
        ));
    };
    if topic.value().trim().is_empty() {
        return Err(syn::Error::new_spanned(
            &topic,
            "the outgoing topic name is empty: write `#[outgoing(name = \"topic\")]`",
        ));
    }
    let encode = match codec.as_ref().map(LitStr::value).as_deref() {
        None | Some("json") => quote!(),
        Some("msgpack") => quote! {
            fn encode(
                &self,
            ) -> ::core::result::Result<
                ::ruststream::__private::Vec<u8>,
                ::ruststream::EncodeError,
            > {
                ::ruststream::__encode_msgpack!(self)
            }
        },
        Some(other) => {
            return Err(syn::Error::new_spanned(
                codec.as_ref(),
                format!("unknown codec `{other}`: choose \"json\" (the default) or \"msgpack\""),
            ))
        }
    };
    let compression = match compression.as_ref().map(|c| (c, c.value())) {
        None => quote!(),
        Some((literal, name)) => {
            let variant = match name.to_ascii_lowercase().as_str() {
                "none" => quote!(None),
                "lz4" => quote!(Lz4),
                "zlib" => quote!(Zlib),
                "zstd" => quote!(Zstd),
                "snappy" => quote!(Snappy),
                _ => {
                    return Err(syn::Error::new_spanned(
                        literal,
                        format!(
                            "unknown compression `{name}`: choose \"none\", \"lz4\", \"zlib\", \
                             \"zstd\" or \"snappy\" (the codecs every Pulsar client reads)"
                        ),
                    ))
                }
            };
            quote! {
                const COMPRESSION: ::core::option::Option<::ruststream::Compression> =
                    ::core::option::Option::Some(::ruststream::Compression::#variant);
            }
        }
    };
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics ::ruststream::outgoing::Outgoing for #ident #ty_generics #where_clause {
            const TOPIC: &'static str = #topic;
            #compression
            #encode
        }
    })
}

//! `#[subscriber(..)]`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ItemFn, Pat, Type};

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if args.is_empty() {
        return Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "#[subscriber] needs to know where to mount the handler: write \
             `#[subscriber(\"topic\")]` or `#[subscriber(PulsarSubscription::new(\"topic\", \
             \"subscription\"))]`",
        ));
    }
    let descriptor: Expr = syn::parse2(args)?;
    let func: ItemFn = syn::parse2(item)?;
    let sig = &func.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "a #[subscriber] handler must be an `async fn`: write `async fn ...`",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a #[subscriber] handler cannot be generic; write one handler per payload type",
        ));
    }
    let name = &sig.ident;
    let name_str = name.to_string();
    let vis = &func.vis;
    let attrs = &func.attrs;

    let mut inputs = sig.inputs.iter();
    let first = inputs.next().ok_or_else(|| {
        syn::Error::new(
            sig.paren_token.span.join(),
            "a #[subscriber] handler takes the decoded payload as its first parameter, a \
             reference `&T` where `T: Deserialize`: e.g. `refund: &Refund`",
        )
    })?;
    let payload_ty =
        match first {
            FnArg::Typed(pt) => match &*pt.ty {
                Type::Reference(r) if r.mutability.is_none() => (*r.elem).clone(),
                other => return Err(syn::Error::new(
                    other.span(),
                    "the first parameter of a #[subscriber] handler is the decoded payload and \
                     must be a shared reference `&T` where `T: Deserialize`: write `&` before \
                     the type, e.g. `refund: &Refund`",
                )),
            },
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    "a #[subscriber] handler is a free function, not a method: remove `self`",
                ))
            }
        };

    let mut extract_tys = Vec::new();
    let mut extract_args = Vec::new();
    let mut extract_lets = Vec::new();
    for (i, input) in inputs.enumerate() {
        let FnArg::Typed(pt) = input else {
            return Err(syn::Error::new(input.span(), "unexpected `self`"));
        };
        let ty = &*pt.ty;
        let var = format_ident!("__arg{}", i);
        let what = match &*pt.pat {
            Pat::Ident(id) => id.ident.to_string(),
            _ => format!("parameter {}", i + 2),
        };
        let _ = what;
        extract_lets.push(quote_spanned! {ty.span()=>
            let #var = <#ty as ::ruststream::handler::Extract<__S>>::extract(
                &message, state, #name_str,
            )?;
        });
        extract_tys.push(ty.clone());
        extract_args.push(var);
    }

    let payload_check = quote_spanned! {payload_ty.span()=>
        const _: () = {
            fn __ruststream_payload_is_decodable<P: ::ruststream::handler::Payload>() {}
            fn __ruststream_check() {
                __ruststream_payload_is_decodable::<#payload_ty>();
            }
        };
    };

    let inputs = &sig.inputs;
    let output = &sig.output;
    let body = &func.block;
    let doc = format!(
        "The `#[subscriber]` handler `{name_str}`; its function body is [`{name_str}::handle`]."
    );

    Ok(quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #name;

        impl #name {
            /// The handler's function, as written.
            #(#attrs)*
            #vis async fn handle(#inputs) #output #body
        }

        #payload_check

        impl<__S> ::ruststream::Handler<__S> for #name
        where
            __S: ::core::marker::Send + ::core::marker::Sync + 'static,
            #(#extract_tys: ::ruststream::handler::Extract<__S>,)*
        {
            fn name(&self) -> &'static str {
                #name_str
            }

            fn descriptor(
                &self,
            ) -> ::ruststream::__private::Box<dyn ::core::any::Any + ::core::marker::Send> {
                ::ruststream::__private::Box::new(#descriptor)
            }

            fn call<'a>(
                &'a self,
                message: ::ruststream::message::Incoming<'a>,
                state: &'a __S,
            ) -> ::ruststream::handler::BoxFuture<
                'a,
                ::core::result::Result<::ruststream::HandlerOutcome, ::ruststream::HandlerError>,
            > {
                ::ruststream::__private::Box::pin(async move {
                    let payload = <#payload_ty as ::ruststream::handler::Payload>::decode(
                        message.payload,
                        #name_str,
                    )?;
                    #(#extract_lets)*
                    ::core::result::Result::Ok(#name::handle(&payload, #(#extract_args),*).await)
                })
            }
        }
    })
}

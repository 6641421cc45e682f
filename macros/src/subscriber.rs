//! `#[subscriber(..)]`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ItemFn, Type};

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if args.is_empty() {
        return Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "#[subscriber] needs to know where to mount the handler: write \
             `#[subscriber(\"topic\")]` or `#[subscriber(PulsarSubscription::new(\"topic\", \
             \"subscription\"))]`",
        ));
    }
    let Args {
        descriptor,
        descriptor_type,
        dead_letters,
    } = syn::parse2(args)?;
    let descriptor_type = match descriptor_type.or_else(|| type_of(&descriptor)) {
        Some(ty) => ty,
        None => {
            return Err(syn::Error::new(
                descriptor.span(),
                "#[subscriber] cannot tell the type of this descriptor: write it as a string \
                 literal or as `Type::constructor(..)` (builder calls after it are fine), or name \
                 the type: `#[subscriber(my_subscription(), descriptor = PulsarSubscription)]`",
            ))
        }
    };
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
    let payload_ty = match first {
        FnArg::Typed(pt) => match &*pt.ty {
            Type::Reference(r) if r.mutability.is_none() => (*r.elem).clone(),
            bytes if crate::message_part_hint::is_byte_vec(bytes) => {
                return Err(syn::Error::new(
                    bytes.span(),
                    "the first parameter of a #[subscriber] handler is the payload, borrowed: to \
                     take its bytes undecoded, write `&[u8]` instead of `Vec<u8>`",
                ))
            }
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "the first parameter of a #[subscriber] handler is the decoded payload and \
                     must be a shared reference `&T` where `T: Deserialize`: write `&` before \
                     the type, e.g. `refund: &Refund`",
                ))
            }
        },
        FnArg::Receiver(r) => {
            return Err(syn::Error::new(
                r.span(),
                "a #[subscriber] handler is a free function, not a method: remove `self`",
            ))
        }
    };

    // `&[T]` but `&[u8]`: a batch handler, whose payloads are `T`s.
    let batch_of = match &payload_ty {
        Type::Slice(slice) if !is_u8(&slice.elem) => Some((*slice.elem).clone()),
        _ => None,
    };
    let mut extract_tys = Vec::new();
    let mut extract_args = Vec::new();
    let mut extract_lets = Vec::new();
    for (i, input) in inputs.enumerate() {
        let FnArg::Typed(pt) = input else {
            return Err(syn::Error::new(input.span(), "unexpected `self`"));
        };
        let ty = &*pt.ty;
        if let Some(hint) = crate::message_part_hint::instead_of(ty) {
            return Err(syn::Error::new(
                ty.span(),
                format!(
                    "`{}` is not a handler parameter; for that part of the message write {hint}",
                    crate::message_part_hint::written(ty)
                ),
            ));
        }
        if let Type::Reference(r) = ty {
            let elem = &r.elem;
            return Err(syn::Error::new(
                ty.span(),
                format!(
                    "the parameters after the payload are taken by value: write `{elem}` \
                     instead of `&{elem}`",
                    elem = crate::message_part_hint::written(elem)
                ),
            ));
        }
        let var = format_ident!("__arg{}", i);
        if batch_of.is_some() {
            extract_lets.push(quote_spanned! {ty.span()=>
                let #var = <#ty as ::ruststream::batch::ExtractBatch<'_, __S>>::extract_batch(
                    batch, state,
                );
            });
            extract_tys.push(ty.clone());
            extract_args.push(var);
            continue;
        }
        extract_lets.push(quote_spanned! {ty.span()=>
            let #var = <#ty as ::ruststream::handler::Extract<__S>>::extract(
                &message, state, #name_str,
            )?;
        });
        extract_tys.push(ty.clone());
        extract_args.push(var);
    }

    // `&[u8]`: the payload as delivered, not decoded (any encoding, or none).
    let raw = matches!(&payload_ty, Type::Slice(slice) if is_u8(&slice.elem));
    let payload_ty = batch_of.clone().unwrap_or(payload_ty);
    let decode = if raw {
        quote!(let payload: &[u8] = message.payload;)
    } else {
        quote! {
            let payload = <#payload_ty as ::ruststream::handler::Payload>::decode(
                message.payload,
                #name_str,
            )?;
            let payload = &payload;
        }
    };
    let payload_schema = if raw {
        quote!()
    } else {
        quote! {
            fn payload_schema(&self) -> ::core::option::Option<::ruststream::Schema> {
                <#payload_ty as ::ruststream::handler::Payload>::schema()
            }
        }
    };
    // What the handler reads, for `<service> asyncapi`: the payload's type, encoding and
    // schema, and whether a parameter reads the key or the properties.
    let message_info = if raw {
        quote!(
            ::ruststream::describe::MessageInfo::new("bytes", "application/octet-stream")
                .with_payload(::ruststream::describe::PayloadSchema::Bytes)
        )
    } else {
        quote! {
            ::ruststream::describe::probe::message(
                ::core::any::type_name::<#payload_ty>(),
                <#payload_ty as ::ruststream::handler::Payload>::content_type(),
                <#payload_ty as ::ruststream::handler::Payload>::schema(),
                (&&&::ruststream::describe::probe::Probe::<#payload_ty>::new()).json_schema(),
            )
        }
    };
    let describe = quote! {
        fn message(&self) -> ::ruststream::describe::MessageInfo {
            #[allow(unused_imports)]
            use ::ruststream::describe::probe::traits::*;
            #[allow(unused_mut)]
            let mut info = #message_info;
            #(
                ::ruststream::describe::probe::note(
                    &mut info,
                    (&&&::ruststream::describe::probe::Probe::<#extract_tys>::new()).part(),
                );
            )*
            info
        }
    };

    let payload_check = if raw {
        quote!()
    } else {
        quote_spanned! {payload_ty.span()=>
            const _: () = {
                fn __ruststream_payload_is_decodable<P: ::ruststream::handler::Payload>() {}
                fn __ruststream_check() {
                    __ruststream_payload_is_decodable::<#payload_ty>();
                }
            };
        }
    };

    let inputs = &sig.inputs;
    let output = &sig.output;
    let body = &func.block;
    let doc = format!(
        "The `#[subscriber]` handler `{name_str}`; its function body is [`{name_str}::handle`]."
    );

    // A batch handler: its `batch(n)` builder, and a `Handler` impl over `call_batch`.
    let batch = batch_of.is_some().then(|| {
        let pieces = BatchPieces {
            name,
            name_str: &name_str,
            payload_ty: &payload_ty,
            extract_tys: &extract_tys,
            extract_args: &extract_args,
            extract_lets: &extract_lets,
        };
        let method = quote! {
            /// This batch handler, gathered in batches of at most `max_messages` (a
            /// registration's `.batch(policy)` overrides it).
            #vis const fn batch(
                self,
                max_messages: ::core::num::NonZeroUsize,
            ) -> ::ruststream::batch::Batched<Self> {
                ::ruststream::batch::Batched::new(self, max_messages)
            }
        };
        (method, batch_handler(&pieces))
    });
    let batch_method = batch.as_ref().map(|(method, _)| method.clone());

    let handler_impl = match batch {
        Some((_, batch_impl)) => batch_impl,
        None => quote! {
            impl<__S> ::ruststream::Handler<__S> for #name
            where
                __S: ::core::marker::Send + ::core::marker::Sync + 'static,
                #(#extract_tys: ::ruststream::handler::Extract<__S>,)*
            {
                fn name(&self) -> &'static str {
                    #name_str
                }


                fn call<'a>(
                    &'a self,
                    message: ::ruststream::handler::Incoming<'a>,
                    state: &'a __S,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<::ruststream::Answer, ::ruststream::Rejection>,
                > + ::core::marker::Send + 'a {
                    async move {
                        #decode
                        #(#extract_lets)*
                        ::core::result::Result::Ok(::ruststream::IntoOutcome::into_outcome(
                            #name::handle(payload, #(#extract_args),*).await,
                        ))
                    }
                }
            }
        },
    };

    Ok(quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #name;

        impl #name {
            /// The handler's function, as written.
            #(#attrs)*
            #vis async fn handle(#inputs) #output #body

            #batch_method
        }

        #payload_check

        impl ::ruststream::handler::Described for #name {
            type Descriptor = #descriptor_type;

            fn descriptor(&self) -> #descriptor_type {
                #descriptor
            }

            fn dead_letters(&self) -> bool {
                #dead_letters
            }

            #payload_schema

            #describe
        }

        #handler_impl
    })
}

/// Whether `ty` is `u8`.
fn is_u8(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("u8"))
}

/// What the `Handler` impl of a batch handler is written from.
struct BatchPieces<'a> {
    name: &'a syn::Ident,
    name_str: &'a str,
    /// The type of one payload: `T` in `&[T]`.
    payload_ty: &'a Type,
    extract_tys: &'a [Type],
    extract_args: &'a [syn::Ident],
    extract_lets: &'a [TokenStream],
}

/// The `Handler` impl of a batch handler: every message decoded, the ones that do not decode
/// rejected on their own, the function called once with the rest, its outcome spread back.
/// A single message is a batch of one.
fn batch_handler(pieces: &BatchPieces<'_>) -> TokenStream {
    let BatchPieces {
        name,
        name_str,
        payload_ty,
        extract_tys,
        extract_args,
        extract_lets,
    } = pieces;
    // `Batch<'_>` is a parameter for any state; the others (`State<T>`) are bounded, for every
    // lifetime of the batch.
    let bounds = extract_tys
        .iter()
        .filter(|ty| !is_batch_view(ty))
        .map(|ty| quote!(#ty: for<'__b> ::ruststream::batch::ExtractBatch<'__b, __S>,));
    quote! {
        impl<__S> ::ruststream::Handler<__S> for #name
        where
            __S: ::core::marker::Send + ::core::marker::Sync + 'static,
            #(#bounds)*
        {
            fn name(&self) -> &'static str {
                #name_str
            }

            fn call<'a>(
                &'a self,
                message: ::ruststream::handler::Incoming<'a>,
                state: &'a __S,
            ) -> impl ::core::future::Future<
                Output = ::core::result::Result<::ruststream::Answer, ::ruststream::Rejection>,
            > + ::core::marker::Send + 'a {
                async move {
                    let messages = [message];
                    let mut spare = ::ruststream::batch::Spare::default();
                    let mut answers = self.call_batch(&messages, state, &mut spare).await;
                    answers.pop().expect("one answer per message")
                }
            }

            fn batch_policy(&self) -> ::core::option::Option<::ruststream::batch::BatchPolicy> {
                ::core::option::Option::Some(::ruststream::batch::BatchPolicy::default())
            }

            fn call_batch<'a>(
                &'a self,
                messages: &'a [::ruststream::handler::Incoming<'a>],
                state: &'a __S,
                spare: &'a mut ::ruststream::batch::Spare,
            ) -> impl ::core::future::Future<
                Output = ::ruststream::__private::Vec<
                    ::core::result::Result<::ruststream::Answer, ::ruststream::Rejection>,
                >,
            > + ::core::marker::Send + 'a
            where
                __S: ::core::marker::Sync,
            {
                async move {
                    let decoded = ::ruststream::batch::Decoded::<#payload_ty>::decode(
                        messages, #name_str, spare,
                    );
                    if decoded.is_empty() {
                        return decoded.finish(::ruststream::batch::BatchOutcome::ack(), spare);
                    }
                    let outcome = {
                        let batch = decoded.batch(messages);
                        #(#extract_lets)*
                        #name::handle(decoded.values(), #(#extract_args),*).await
                    };
                    decoded.finish(outcome, spare)
                }
            }
        }
    }
}

/// Whether `ty` is the `Batch<'_>` parameter (its last path segment is `Batch`).
fn is_batch_view(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Batch"))
}

/// The attribute's arguments: the descriptor, then options in any order: its type
/// (`descriptor = Type`) and `dead_letter` (the handler may dead-letter a message itself).
struct Args {
    descriptor: Expr,
    descriptor_type: Option<Type>,
    dead_letters: bool,
}

impl syn::parse::Parse for Args {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let descriptor: Expr = input.parse()?;
        let mut descriptor_type = None;
        let mut dead_letters = false;
        while input.peek(syn::Token![,]) {
            input.parse::<syn::Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: syn::Ident = input.parse()?;
            if key == "descriptor" && descriptor_type.is_none() {
                input.parse::<syn::Token![=]>()?;
                descriptor_type = Some(input.parse()?);
            } else if key == "dead_letter" && !dead_letters {
                dead_letters = true;
            } else {
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "`{key}` is not an option of #[subscriber] here; after the descriptor \
                         come, once each: `descriptor = Type` (the descriptor's type, when it \
                         cannot be read) and `dead_letter` (the handler may return \
                         `HandlerOutcome::dead_letter`, so its registration must name a \
                         dead-letter topic)"
                    ),
                ));
            }
        }
        Ok(Args {
            descriptor,
            descriptor_type,
            dead_letters,
        })
    }
}

/// The type of a descriptor written the documented ways: a string literal (`&'static str`), or
/// `Type::constructor(..)` followed by builder calls that return the same type.
fn type_of(descriptor: &Expr) -> Option<Type> {
    match descriptor {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_),
            ..
        }) => Some(syn::parse_quote!(&'static str)),
        Expr::MethodCall(call) => type_of(&call.receiver),
        Expr::Paren(inner) => type_of(&inner.expr),
        Expr::Group(inner) => type_of(&inner.expr),
        Expr::Call(call) => match &*call.func {
            Expr::Path(path) if path.qself.is_none() && path.path.segments.len() >= 2 => {
                let mut ty = path.path.clone();
                ty.segments.pop();
                // `pop` leaves the separator after the type's last segment.
                let last = ty.segments.pop()?.into_value();
                ty.segments.push(last);
                Some(Type::Path(syn::TypePath {
                    qself: None,
                    path: ty,
                }))
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;

    fn type_of(expr: &str) -> Option<String> {
        let expr: syn::Expr = syn::parse_str(expr).expect("an expression");
        super::type_of(&expr).map(|t| t.to_token_stream().to_string())
    }

    #[test]
    fn the_descriptor_type_is_read_from_the_documented_forms() {
        assert_eq!(type_of("\"refunds\"").as_deref(), Some("& 'static str"));
        assert_eq!(
            type_of("PulsarSubscription::new(\"a\", \"b\").ack_timeout(d)").as_deref(),
            Some("PulsarSubscription")
        );
        assert_eq!(
            type_of("ruststream_pulsar::PulsarSubscription::topic(\"a\")").as_deref(),
            Some("ruststream_pulsar :: PulsarSubscription")
        );
        assert_eq!(type_of("subscription()"), None);
        assert_eq!(type_of("SUBSCRIPTION"), None);
    }
}

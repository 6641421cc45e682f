//! `#[derive(Outgoing)]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{DeriveInput, LitStr};

pub(crate) fn expand(item: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(item)?;
    let mut topic: Option<LitStr> = None;
    let mut codec: Option<LitStr> = None;
    let mut schema: Option<LitStr> = None;
    let mut compression: Option<LitStr> = None;
    let mut batching: Option<LitStr> = None;
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
            } else if meta.path.is_ident("schema") {
                schema = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("compression") {
                compression = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("batching") {
                batching = Some(meta.value()?.parse()?);
                Ok(())
            } else {
                Err(meta.error(
                    "unknown `outgoing` option; the options are `name = \"topic\"`, \
                     `codec = \"json\" | \"msgpack\" | \"avro\"`, `schema = \"json\"`, \
                     `compression = \"none\" | \"lz4\" | \"zlib\" | \"zstd\" | \"snappy\"` \
                     and `batching = \"on\" | \"off\" | \"key_based\"`",
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
        Some("avro") => quote! {
            fn encode(
                &self,
            ) -> ::core::result::Result<
                ::ruststream::__private::Vec<u8>,
                ::ruststream::EncodeError,
            > {
                ::ruststream::__avro!(encode self)
            }
        },
        Some(other) => {
            return Err(syn::Error::new_spanned(
                codec.as_ref(),
                format!(
                    "unknown codec `{other}`: choose \"json\" (the default), \"msgpack\" or \
                     \"avro\""
                ),
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
    let batching = match batching.as_ref().map(|b| (b, b.value())) {
        None => quote!(),
        Some((literal, name)) => {
            let value = match name.as_str() {
                "on" => quote!(::ruststream::publish::Batching::new()),
                "off" => quote!(::ruststream::publish::Batching::off()),
                "key_based" => quote!(::ruststream::publish::Batching::new().key_based()),
                _ => {
                    return Err(syn::Error::new_spanned(
                        literal,
                        format!(
                            "unknown batching `{name}`: choose \"on\" (the Java client's \
                             defaults), \"off\" (an entry a message) or \"key_based\" \
                             (messages with different keys never share an entry)"
                        ),
                    ))
                }
            };
            quote! {
                const BATCHING: ::core::option::Option<::ruststream::publish::Batching> =
                    ::core::option::Option::Some(#value);
            }
        }
    };
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    // The schema registered with the topic: Avro's for Avro payloads; for JSON, only when
    // asked (`schema = "json"`), since it needs the type to describe itself (`AvroSchema`).
    let codec_name = codec.as_ref().map(LitStr::value);
    let schema_expr = match (codec_name.as_deref(), schema.as_ref().map(LitStr::value)) {
        (Some("avro"), None) => Some(quote!(::ruststream::__avro!(schema avro Self))),
        (Some("avro"), Some(s)) if s == "avro" => {
            Some(quote!(::ruststream::__avro!(schema avro Self)))
        }
        (None | Some("json"), Some(s)) if s == "json" => {
            Some(quote!(::ruststream::__avro!(schema json Self)))
        }
        (_, None) => None,
        (codec_name, Some(s)) => {
            return Err(syn::Error::new_spanned(
                schema.as_ref(),
                format!(
                    "`schema = \"{s}\"` does not describe a {} payload: JSON payloads take \
                     `schema = \"json\"`, Avro payloads (`codec = \"avro\"`) register their \
                     Avro schema without it, MessagePack has no Pulsar schema",
                    codec_name.unwrap_or("json")
                ),
            ))
        }
    };
    let schema_fn = schema_expr.map(|expr| {
        quote! {
            fn schema() -> ::core::option::Option<::ruststream::Schema> {
                #expr
            }
        }
    });
    // The type as a message of `<service> asyncapi`: its encoding, and a JSON Schema where
    // it derives `schemars::JsonSchema` (probed on the concrete type; a generic type keeps the
    // trait's default).
    let content_type = match codec_name.as_deref() {
        Some("msgpack") => "application/msgpack",
        Some("avro") => "avro/binary",
        _ => "application/json",
    };
    let message_fn = input.generics.params.is_empty().then(|| {
        quote! {
            fn message() -> ::ruststream::describe::MessageInfo {
                #[allow(unused_imports)]
                use ::ruststream::describe::probe::traits::*;
                ::ruststream::describe::probe::message(
                    ::core::any::type_name::<Self>(),
                    #content_type,
                    <Self as ::ruststream::outgoing::Outgoing>::schema(),
                    (&&&::ruststream::describe::probe::Probe::<Self>::new()).json_schema(),
                )
            }
        }
    });
    Ok(quote! {
        impl #impl_generics ::ruststream::outgoing::Outgoing for #ident #ty_generics #where_clause {
            const TOPIC: &'static str = #topic;
            #compression
            #batching
            #encode
            #schema_fn
            #message_fn
        }
    })
}

//! Plain types written where a handler wants a part of its message: the wrapper to write instead.
//!
//! A handler parameter after the payload is an extractor (`Properties`, `MessageKey`, ...). A
//! newcomer often writes the plain type the part holds (`attempt: u32`, `topic: &str`), which
//! the compiler would only refuse with "not extractable". These types are recognised by name and
//! answered with the wrapper that holds them. (An app could in principle implement the core's
//! `Extract<ItsState>` for `u32`; such a parameter would say nothing about what it is, so it is
//! refused here too.)

use syn::{GenericArgument, PathArguments, Type};

/// The parameter to write instead of `ty` after the payload, if `ty` is a plain type that
/// holds a part of the message.
pub(crate) fn instead_of(ty: &Type) -> Option<&'static str> {
    const NAME: &str = "`Topic` for the topic, `MessageKey` for the key, or `MessageId` for the \
                        message id (each prints as its text)";
    match ty {
        Type::Reference(r) if is(&r.elem, "str") => Some(NAME),
        Type::Paren(p) => instead_of(&p.elem),
        Type::Group(g) => instead_of(&g.elem),
        Type::Path(_) => {
            let (ident, arg) = last_segment(ty)?;
            match (ident.as_str(), arg) {
                ("String", None) => Some(NAME),
                ("Option", Some(inner)) if is(inner, "String") => {
                    Some("`MessageKey`: its `.0` is the key, `None` when the producer set none")
                }
                ("Option", Some(inner)) if is(inner, "Duration") || is(inner, "SystemTime") => {
                    Some(EVENT_TIME)
                }
                ("Option", Some(inner)) if is_integer(inner) => Some(REDELIVERY),
                (name, None) if INTEGERS.contains(&name) => Some(REDELIVERY),
                ("Duration" | "SystemTime" | "Instant", None) => Some(
                    "`PublishTime` for when the broker stored the message, or `EventTime` for \
                     the time its producer set",
                ),
                ("HashMap" | "BTreeMap", _) => Some(PROPERTIES),
                _ if is_byte_vec(ty) => Some(
                    "nothing here: the payload is the first parameter; to take its bytes \
                     undecoded, make it `payload: &[u8]`",
                ),
                ("Vec", Some(Type::Tuple(_))) => Some(PROPERTIES),
                _ => None,
            }
        }
        _ => None,
    }
}

const EVENT_TIME: &str =
    "`EventTime`: its `.0` is the time its producer set, since the Unix epoch, `None` when unset";
const REDELIVERY: &str = "`RedeliveryCount`: its `.0` is how many times the message was \
                          delivered before, `None` where the client does not tell";
const PROPERTIES: &str = "`Properties`: `get(name)` reads one property, and it iterates over all";
const INTEGERS: [&str; 10] = [
    "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize",
];

/// `ty` as a user writes it (`Option<String>`, `&str`), for error messages.
pub(crate) fn written(ty: &Type) -> String {
    quote::quote!(#ty)
        .to_string()
        .replace(" < ", "<")
        .replace(" <", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace("& ", "&")
        .replace(" :: ", "::")
}

/// Whether `ty` is `Vec<u8>`: the payload's bytes, asked for owned.
pub(crate) fn is_byte_vec(ty: &Type) -> bool {
    matches!(last_segment(ty), Some((name, Some(inner))) if name == "Vec" && is(inner, "u8"))
}

fn is_integer(ty: &Type) -> bool {
    matches!(last_segment(ty), Some((name, None)) if INTEGERS.contains(&name.as_str()))
}

/// Whether `ty` is a path whose last segment is `name`, without generic arguments.
fn is(ty: &Type, name: &str) -> bool {
    matches!(last_segment(ty), Some((ident, None)) if ident == name)
}

/// The last segment of a path type, and its first generic type argument, if any.
fn last_segment(ty: &Type) -> Option<(String, Option<&Type>)> {
    let Type::Path(p) = ty else { return None };
    if p.qself.is_some() {
        return None;
    }
    let last = p.path.segments.last()?;
    let arg = match &last.arguments {
        PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    };
    Some((last.ident.to_string(), arg))
}

#[cfg(test)]
mod tests {
    use super::instead_of;

    fn hint(ty: &str) -> Option<&'static str> {
        instead_of(&syn::parse_str(ty).expect("a type"))
    }

    #[test]
    fn plain_types_are_answered_with_the_wrapper_that_holds_them() {
        assert!(hint("&str").unwrap().starts_with("`Topic`"));
        assert!(hint("String").unwrap().starts_with("`Topic`"));
        assert!(hint("Option<String>").unwrap().starts_with("`MessageKey`"));
        assert!(hint("u32").unwrap().starts_with("`RedeliveryCount`"));
        assert!(hint("Option<u32>")
            .unwrap()
            .starts_with("`RedeliveryCount`"));
        assert!(hint("std::time::SystemTime")
            .unwrap()
            .starts_with("`PublishTime`"));
        assert!(hint("Option<Duration>").unwrap().starts_with("`EventTime`"));
        assert!(hint("HashMap<String, String>")
            .unwrap()
            .starts_with("`Properties`"));
        assert!(hint("Vec<(String, String)>")
            .unwrap()
            .starts_with("`Properties`"));
        assert!(hint("Vec<u8>").unwrap().contains("`payload: &[u8]`"));
    }

    #[test]
    fn types_are_quoted_as_written() {
        for ty in [
            "Option<String>",
            "&str",
            "HashMap<String, String>",
            "std::time::SystemTime",
        ] {
            assert_eq!(super::written(&syn::parse_str(ty).unwrap()), ty);
        }
    }

    #[test]
    fn extractors_and_other_types_are_left_to_the_compiler() {
        for ty in [
            "Properties",
            "MessageKey",
            "State<Arc<Db>>",
            "Publisher",
            "Option<Config>",
            "&Properties",
            "Vec<Job>",
        ] {
            assert_eq!(hint(ty), None, "{ty}");
        }
    }
}

//! `Properties`: every property of the message.

use alloc::string::String;
use alloc::vec::Vec;

use crate::handler::Incoming;
use crate::handler::{Extract, Rejection};

/// All properties of the delivered message, in the order the message carries them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties(Vec<(String, String)>);

impl Properties {
    /// The value of property `name`, if the message has it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every property, as `(name, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// How many properties there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<S> Extract<S> for Properties {
    fn extract(message: &Incoming<'_>, _: &S, _: &'static str) -> Result<Self, Rejection> {
        Ok(Properties(message.properties.to_vec()))
    }
}

/// Handlers that take the properties say so in the service's description
/// (`<service> asyncapi`).
impl crate::describe::probe::ReadsPart for &&crate::describe::probe::Probe<Properties> {
    fn part(&self) -> Option<crate::describe::probe::Part> {
        Some(crate::describe::probe::Part::Properties)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::borrow::ToOwned;
    use alloc::vec;

    #[test]
    fn properties_are_found_by_name_and_kept_in_order() {
        let properties = vec![
            ("tenant".to_owned(), "acme".to_owned()),
            ("trace".to_owned(), "t-1".to_owned()),
        ];
        let message = Incoming::new(b"{}", &properties, "persistent://public/default/t");
        let p = <Properties as Extract<()>>::extract(&message, &(), "h").expect("always");
        assert_eq!(p.get("tenant"), Some("acme"));
        assert_eq!(p.get("missing"), None);
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            [("tenant", "acme"), ("trace", "t-1")]
        );
        assert_eq!(p.len(), 2);
    }
}

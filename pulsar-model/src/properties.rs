//! A message's properties: the name/value list a topic keeps with it.

use std::collections::BTreeMap;

/// Name/value pairs sorted by name, each name once: what a topic keeps of a message's
/// properties.
///
/// A stored message keeps them in its [`Content`](crate::Content), which every delivery of it
/// shares: a delivery costs no allocation for its properties, however many it has. The list
/// is the one the publisher built, sorted in place, so keeping it costs no allocation either.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties(Vec<(String, String)>);

impl Properties {
    /// The value of property `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }

    /// How many properties there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The pairs, sorted by name.
    pub fn as_slice(&self) -> &[(String, String)] {
        &self.0
    }

    /// A map of them, to change (a dead-letter copy adds its own).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.0.iter().cloned().collect()
    }
}

impl From<BTreeMap<String, String>> for Properties {
    fn from(map: BTreeMap<String, String>) -> Self {
        // A map's pairs come sorted by name, each name once.
        Properties(map.into_iter().collect())
    }
}

impl From<Vec<(String, String)>> for Properties {
    /// Sorted by name in place; of pairs with the same name the last is kept, as inserting
    /// them into a map one by one would. The list itself is kept: no allocation.
    fn from(mut pairs: Vec<(String, String)>) -> Self {
        // Stable: pairs with the same name keep their order, so the last given is the last.
        pairs.sort_by(|(a, _), (b, _)| a.cmp(b));
        // Of each run of one name, the last pair moves to the run's first place.
        pairs.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        Properties(pairs)
    }
}

impl FromIterator<(String, String)> for Properties {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        Properties::from(pairs.into_iter().collect::<Vec<_>>())
    }
}

impl Properties {
    /// The same properties with `name` set to `value` (replacing any value it had).
    pub fn with(self, name: String, value: String) -> Self {
        let mut pairs = self.0;
        pairs.push((name, value));
        Properties::from(pairs)
    }
}

impl std::ops::Index<&str> for Properties {
    type Output = String;

    /// The value of property `name`; panics if there is none, as a map does.
    fn index(&self, name: &str) -> &String {
        match self.0.binary_search_by(|(k, _)| k.as_str().cmp(name)) {
            Ok(i) => &self.0[i].1,
            Err(_) => panic!("no property `{name}`"),
        }
    }
}

impl PartialEq<BTreeMap<String, String>> for Properties {
    fn eq(&self, map: &BTreeMap<String, String>) -> bool {
        self.len() == map.len()
            && self
                .as_slice()
                .iter()
                .zip(map)
                .all(|((k, v), (mk, mv))| k == mk && v == mv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_found_by_name_and_compare_with_a_map() {
        let map: BTreeMap<String, String> = [("b", "2"), ("a", "1")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into();
        let properties = Properties::from(map.clone());
        assert_eq!(properties.get("a"), Some("1"));
        assert_eq!(properties["b"], "2");
        assert_eq!(properties.get("c"), None);
        assert_eq!(properties.len(), 2);
        assert_eq!(properties, map);
        assert_eq!(properties.to_map(), map);
        assert!(Properties::from(BTreeMap::new()).is_empty());
    }

    #[test]
    fn pairs_are_sorted_and_the_last_of_a_name_wins() {
        let pairs = [("b", "2"), ("a", "1"), ("b", "3")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .to_vec();
        let properties = Properties::from(pairs);
        assert_eq!(
            properties.as_slice(),
            [
                ("a".to_owned(), "1".to_owned()),
                ("b".to_owned(), "3".to_owned())
            ]
        );
        let properties = properties.with("a".into(), "9".into());
        assert_eq!(properties["a"], "9");
        assert_eq!(properties.len(), 2);
        assert!(Properties::from(Vec::new()).is_empty());
    }
}

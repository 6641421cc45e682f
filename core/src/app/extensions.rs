//! Values handed to brokers at start, looked up by type.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::any::{Any, TypeId};

/// A map from a type to one value of it.
///
/// Lets whoever starts an app hand a broker something only that broker understands (an
/// in-process cluster to share, settings that replace the app's own) without the core knowing
/// the type. Values are shared: cloning the map clones pointers.
#[derive(Clone, Default)]
pub(crate) struct Extensions {
    values: BTreeMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Extensions {
    /// An empty map.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Put `value`, replacing a value of the same type.
    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.values.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if one was put.
    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|v| (**v).downcast_ref::<T>())
    }

    /// How many values there are.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.values.len()
    }
}

impl core::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.values.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Url(&'static str);

    #[test]
    fn a_value_is_found_by_its_type_and_replaced_by_the_next_of_that_type() {
        let mut ext = Extensions::new();
        assert!(ext.get::<Url>().is_none());
        ext.insert(Url("a"));
        ext.insert(7u32);
        ext.insert(Url("b"));
        assert_eq!(ext.get::<Url>(), Some(&Url("b")));
        assert_eq!(ext.get::<u32>(), Some(&7));
        assert!(ext.get::<u64>().is_none());
        assert_eq!(ext.clone().len(), 2);
    }
}

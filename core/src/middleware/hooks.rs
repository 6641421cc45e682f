//! Which hooks a layer has.

/// The hooks a layer has, so that a stack calls only those on every message: a layer that
/// says it has no `publish` hook is not called for each publish, and a stack of such layers
/// leaves the publishing port as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hooks(u8);

impl Hooks {
    /// `before`.
    pub const BEFORE: Hooks = Hooks(1);
    /// `after`.
    pub const AFTER: Hooks = Hooks(2);
    /// `completed`.
    pub const COMPLETED: Hooks = Hooks(4);
    /// `publish`.
    pub const PUBLISH: Hooks = Hooks(8);
    /// Every hook: what a layer that does not say has.
    pub const ALL: Hooks = Hooks(15);

    /// These hooks and `other`'s.
    #[inline]
    pub const fn and(self, other: Hooks) -> Hooks {
        Hooks(self.0 | other.0)
    }

    /// Whether these include every hook of `other`.
    #[inline]
    pub const fn has(self, other: Hooks) -> bool {
        self.0 & other.0 == other.0
    }
}

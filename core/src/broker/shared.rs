//! A message kept by a broker and shared with each delivery of it.

/// A message's body and properties that a broker keeps (an in-process broker's stored
/// message) and shares with each delivery of it: handing a delivery over copies neither.
pub trait SharedMessage: core::fmt::Debug + Send + Sync {
    /// The body.
    fn payload(&self) -> &[u8];
    /// The properties (headers).
    fn properties(&self) -> &[(alloc::string::String, alloc::string::String)];
}

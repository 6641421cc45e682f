//! What the machine reads of a delivery.

use super::BatchSlot;

/// A delivery as the subscription machine sees it: the driver's own type (its payload,
/// properties and topic stay opaque here), read through these few accessors.
///
/// An implementation MUST:
/// - answer the same for the same delivery every time it is asked (the machine may ask more
///   than once);
/// - keep [`Envelope::set_redelivery_count`]'s value: it is the delivery's one attempt count
///   from then on, which its handler sees.
pub trait Envelope {
    /// The transport's message id: what a consumer call names.
    type Id: Clone + PartialEq;

    /// Its id.
    fn id(&self) -> &Self::Id;

    /// Its key, if the message has one.
    fn key(&self) -> Option<&str>;

    /// Its place in a batched entry, if it was published in a batch.
    fn batch(&self) -> Option<BatchSlot>;

    /// The broker's redelivery count (on a batched entry, the entry's), where the transport
    /// tells it.
    fn redelivery_count(&self) -> Option<u32>;

    /// How many times the message went through the registration's retry topic before this
    /// delivery (the broker's own property for it, read by the transport); 0 without one.
    fn republished(&self) -> u32;

    /// Set the count its handler sees: the broker's plus [`Envelope::republished`], one
    /// attempt count for every way a message comes back.
    fn set_redelivery_count(&mut self, count: Option<u32>);

    /// Its payload's size, which a batch handler's batches are cut by.
    fn bytes(&self) -> usize;
}

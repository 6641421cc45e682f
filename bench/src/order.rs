//! The benchmark's message: a four-field JSON payload with two strings, as a shop would send.

use serde::{Deserialize, Serialize};

/// An order, about 90 bytes as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    /// Its number.
    pub id: u64,
    /// Who placed it.
    pub customer: String,
    /// How much, in cents.
    pub amount_cents: u64,
    /// In which currency.
    pub currency: String,
}

impl Order {
    /// The `n`-th sample order.
    pub fn sample(n: u64) -> Self {
        Order {
            id: n,
            customer: format!("customer-{:06}", n % 1000),
            amount_cents: 1000 + n % 9000,
            currency: "EUR".to_owned(),
        }
    }

    /// The `n`-th sample order as a JSON line.
    pub fn json(n: u64) -> Vec<u8> {
        serde_json::to_vec(&Self::sample(n)).expect("an order encodes")
    }
}

/// A JSON payload of exactly `size` bytes (for the live benchmark's 128-byte messages): the
/// sample order with its customer padded.
pub fn json_of_size(n: u64, size: usize) -> Vec<u8> {
    let mut order = Order::sample(n);
    let base = serde_json::to_vec(&order).expect("an order encodes").len();
    if size > base {
        order.customer.push_str(&"x".repeat(size - base));
    }
    serde_json::to_vec(&order).expect("an order encodes")
}

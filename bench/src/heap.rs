//! Heap use between two points of a benchmark, read from a counting global allocator.

use std::alloc::System;

use stats_alloc::{Region, StatsAlloc};

/// The counting allocator each benchmark binary installs as its global allocator:
/// `#[global_allocator] static GLOBAL: &StatsAlloc<System> = &stats_alloc::INSTRUMENTED_SYSTEM;`
pub type Counting = StatsAlloc<System>;

/// Heap activity since a [`Heap::start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapChange {
    /// Allocations made (reallocations not counted).
    pub allocations: usize,
    /// Reallocations made.
    pub reallocations: usize,
    /// Bytes still held that were not held at the start (negative if fewer are held).
    pub retained_bytes: isize,
}

impl HeapChange {
    /// Allocations per unit of work, for `units` units.
    pub fn allocations_per(&self, units: usize) -> f64 {
        self.allocations as f64 / units as f64
    }

    /// Bytes retained per unit of work, for `units` units.
    pub fn retained_per(&self, units: usize) -> f64 {
        self.retained_bytes as f64 / units as f64
    }
}

/// A point to measure heap activity from.
pub struct Heap<'a> {
    region: Region<'a, System>,
}

impl<'a> Heap<'a> {
    /// Start counting on `allocator` (the binary's global one).
    pub fn start(allocator: &'a Counting) -> Self {
        Heap {
            region: Region::new(allocator),
        }
    }

    /// What happened since the start.
    pub fn change(&self) -> HeapChange {
        let stats = self.region.change();
        HeapChange {
            allocations: stats.allocations,
            reallocations: stats.reallocations,
            // stats_alloc adds a reallocation's growth to `bytes_allocated` (its shrinking to
            // `bytes_deallocated`) and also to `bytes_reallocated`: counting the latter too
            // would count every grown vector twice.
            retained_bytes: stats.bytes_allocated as isize - stats.bytes_deallocated as isize,
        }
    }
}

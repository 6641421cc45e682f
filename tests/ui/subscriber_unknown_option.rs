use ruststream_pulsar::prelude::*;

// A misspelt option: `dead_letter` is the one that declares a handler that dead-letters.
#[subscriber("refunds", dead_letters)]
async fn process(_id: &u64) -> HandlerOutcome {
    HandlerOutcome::dead_letter("poison")
}

fn main() {}

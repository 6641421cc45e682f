use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use spin::Mutex;

use super::*;
use crate::completion::Completion;
use crate::handler::Incoming;
use crate::message::Message;
use crate::outcome::HandlerOutcome;
use crate::publish::PublishError;
use crate::time::Instant;

/// Writes what each hook saw into a shared log, under its name.
struct Log {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    answer: Option<HandlerOutcome>,
}

impl Log {
    fn write(&self, what: &str) {
        self.log.lock().push(alloc::format!("{} {what}", self.name));
    }
}

impl Layer for Log {
    fn before(&self, _: &mut Delivery<'_>) -> Flow {
        self.write("before");
        self.answer.map_or(Flow::Next, Flow::Return)
    }
    fn after(&self, _: &Delivery<'_>, end: &mut End<'_>) {
        self.write(end.completion().label());
    }
    fn completed(&self, _: &Delivery<'_>, end: &End<'_>) {
        self.write(&alloc::format!("completed {}", end.completion().label()));
    }
    fn publish(&self, message: &mut Message) -> Result<(), PublishError> {
        self.write("publish");
        message.properties.push((self.name.into(), "1".into()));
        Ok(())
    }
}

struct Refuse;

impl Layer for Refuse {
    fn publish(&self, message: &mut Message) -> Result<(), PublishError> {
        Err(PublishError::refused(message.topic.clone(), "not for us"))
    }
}

fn stack(answers: &[Option<HandlerOutcome>]) -> (Stack, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let names = ["outer", "middle", "inner"];
    let stack = answers
        .iter()
        .zip(names)
        .fold(Stack::new(), |stack, (answer, name)| {
            stack.push(Log {
                name,
                log: log.clone(),
                answer: *answer,
            })
        });
    (stack, log)
}

/// Runs one delivery through `stack` as a driver does, the handler answering `ack`.
fn deliver(stack: &Stack, out_of_attempts: bool) -> Completion {
    let properties = Vec::new();
    let incoming = || Incoming::new(b"{}", &properties, "persistent://public/default/t");
    let mut delivery = Delivery::new(&incoming, "h", "s", Instant::ZERO);
    if out_of_attempts {
        delivery.set_out_of_attempts();
    }
    let entered = stack.before(&mut delivery);
    let completion = match (out_of_attempts, entered.answer()) {
        (true, _) => Completion::OutOfAttempts,
        (false, Some(outcome)) => Completion::Returned(outcome),
        (false, None) => Completion::Returned(HandlerOutcome::Ack),
    };
    let mut end = End::new(completion, None, Instant::ZERO, entered.answer().is_none());
    stack.after(entered, &delivery, &mut end);
    stack.completed(entered, &delivery, &end);
    end.completion()
}

#[test]
fn before_runs_outside_in_and_after_inside_out() {
    let (stack, log) = stack(&[None, None, None]);
    assert_eq!(
        deliver(&stack, false),
        Completion::Returned(HandlerOutcome::Ack)
    );
    assert_eq!(
        *log.lock(),
        [
            "outer before",
            "middle before",
            "inner before",
            "inner ack",
            "middle ack",
            "outer ack",
            "inner completed ack",
            "middle completed ack",
            "outer completed ack",
        ]
    );
}

#[test]
fn a_layer_that_answers_keeps_the_layers_further_in_and_the_handler_out() {
    let (stack, log) = stack(&[None, Some(HandlerOutcome::Drop), None]);
    assert_eq!(
        deliver(&stack, false),
        Completion::Returned(HandlerOutcome::Drop)
    );
    assert_eq!(
        *log.lock(),
        [
            "outer before",
            "middle before",
            "outer drop",
            "outer completed drop"
        ]
    );
}

#[test]
fn a_delivery_out_of_attempts_passes_every_layer_whatever_they_answer() {
    let (stack, log) = stack(&[Some(HandlerOutcome::Retry), None]);
    assert_eq!(deliver(&stack, true), Completion::OutOfAttempts);
    assert_eq!(log.lock().len(), 6, "{:?}", log.lock());
}

#[test]
fn after_may_replace_the_answer_for_the_layers_further_out() {
    struct DropAll;
    impl Layer for DropAll {
        fn after(&self, _: &Delivery<'_>, end: &mut End<'_>) {
            end.answer(HandlerOutcome::Drop);
        }
    }
    let (stack, log) = stack(&[None]);
    let stack = stack.push(DropAll);
    assert_eq!(
        deliver(&stack, false),
        Completion::Returned(HandlerOutcome::Drop)
    );
    assert_eq!(log.lock()[1], "outer drop");
}

#[test]
fn publish_hooks_run_inside_out_and_a_refusal_stops_the_message() {
    let (stack, log) = stack(&[None, None]);
    let mut message = Message::new("t", Vec::new());
    stack.publish(&mut message).expect("no layer refuses");
    assert_eq!(*log.lock(), ["middle publish", "outer publish"]);
    assert_eq!(message.properties[0].0, "middle");
    let refusing = Stack::new().push(Refuse).around(&stack);
    let error = refusing
        .publish(&mut Message::new("audit", Vec::new()))
        .expect_err("refused");
    assert!(
        error.to_string().contains("to `audit`: not for us"),
        "{error}"
    );
    assert_eq!(
        log.lock().len(),
        4,
        "the inner layers ran before the refusal"
    );
}

#[test]
fn layers_are_found_replaced_and_removed_by_type() {
    struct A;
    impl Layer for A {}
    struct B;
    impl Layer for B {}
    struct C;
    impl Layer for C {}
    let stack = Stack::new().push(A).push(B);
    assert_eq!(stack.position::<B>(), Some(1));
    let replaced = stack.clone().replace::<A>(C);
    assert_eq!(replaced.position::<C>(), Some(0));
    assert!(!replaced.contains::<A>());
    assert!(stack.contains::<A>(), "a stack handed out does not change");
    assert_eq!(replaced.without::<B>().len(), 1);
    assert_eq!(Stack::new().push(A).insert(0, B).position::<B>(), Some(0));
}

#[test]
fn mount_makes_each_layer_for_its_registration() {
    struct Named(&'static str);
    impl Layer for Named {
        fn mount(&self, registration: &Mounting<'_>) -> Option<Arc<dyn Layer>> {
            Some(Arc::new(Named(registration.handler)))
        }
        fn publish(&self, message: &mut Message) -> Result<(), PublishError> {
            message.properties.push(("by".into(), self.0.into()));
            Ok(())
        }
    }
    let mounted = Stack::new()
        .push(Named("nobody"))
        .mount(&Mounting::new("refund", "refunds", "refunds"));
    let mut message = Message::new("t", Vec::new());
    mounted.publish(&mut message).expect("accepted");
    assert_eq!(message.properties, [("by".into(), "refund".into())]);
}

#[test]
fn each_hook_calls_only_the_layers_that_have_it_in_the_stack_s_order() {
    /// Records which of its hooks ran, with its name.
    struct Only(
        &'static str,
        Hooks,
        Arc<Mutex<Vec<(&'static str, &'static str)>>>,
    );
    impl Layer for Only {
        fn hooks(&self) -> Hooks {
            self.1
        }
        fn before(&self, _: &mut Delivery<'_>) -> Flow {
            self.2.lock().push((self.0, "before"));
            Flow::Next
        }
        fn after(&self, _: &Delivery<'_>, _: &mut End<'_>) {
            self.2.lock().push((self.0, "after"));
        }
        fn completed(&self, _: &Delivery<'_>, _: &End<'_>) {
            self.2.lock().push((self.0, "completed"));
        }
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let stack = Stack::new()
        .push(Only("span", Hooks::BEFORE.and(Hooks::AFTER), seen.clone()))
        .push(Only(
            "count",
            Hooks::BEFORE.and(Hooks::COMPLETED),
            seen.clone(),
        ))
        .push(Only(
            "audit",
            Hooks::AFTER.and(Hooks::COMPLETED),
            seen.clone(),
        ));
    deliver(&stack, false);
    assert_eq!(
        *seen.lock(),
        [
            ("span", "before"),
            ("count", "before"),
            ("audit", "after"),
            ("span", "after"),
            ("audit", "completed"),
            ("count", "completed"),
        ],
        "hooks a layer says it has not are never called; the order is the stack's"
    );
}

#[test]
fn a_stack_of_no_layers_passes_every_delivery_and_changes_no_answer() {
    assert_eq!(
        deliver(&Stack::new(), false),
        Completion::Returned(HandlerOutcome::Ack)
    );
    assert_eq!(deliver(&Stack::new(), true), Completion::OutOfAttempts);
}

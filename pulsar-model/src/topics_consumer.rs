//! A consumer of several topics: pulsar-rs's `MultiTopicConsumer`, which a consumer becomes
//! when it is given several topics, a partitioned topic or a pattern.
//!
//! The broker knows no such thing: each topic (each partition) has its own subscription,
//! cursor, dispatcher and consumer, with their own permits, redelivery counts and ack timeouts,
//! exactly as for a consumer of one topic. What the client adds (pulsar-rs
//! `consumer/multi.rs`, `consumer/builder.rs`):
//!
//! - a partitioned topic is looked up and each of its partitions subscribed
//!   (`lookup_partitioned_topic`), under the same subscription name, type and options;
//! - the application receives from the topics in turn: each poll goes round the topics and
//!   takes from the first that has a message ready;
//! - a pattern lists the namespace's topics (`get_topics_of_namespace`) when the consumer is
//!   built and again at every tick of its refresh interval (`with_topic_refresh`, 30 s by
//!   default in pulsar-rs: ticks at `start + k × refresh`), and subscribes the topics that match
//!   and are new. A topic created between two ticks is read from the next one; with the Latest
//!   initial position what it received before that is not delivered (the subscription is
//!   created then). A tick that finds nothing new changes nothing, so the model asks its
//!   caller to wait only for the ticks that will ([`TopicsConsumer::next_refresh`]): a caller
//!   on a virtual clock then has no timer pending while no topic is waiting to be found;
//! - acknowledgements and redelivery requests go to the consumer of the message's topic.
//!
//! [`TopicsConsumer`] is that client over the model's per-topic consumers; it takes the
//! [`Cluster`] and `now` in every call and keeps the refresh deadline for its caller to wait on.

use std::time::Duration;

use ruststream::{Instant, SubscriptionType};

use crate::TopicPattern;
use crate::{Cluster, ConsumerId, ConsumerOptions, Dispatched, MessageId, ModelError, TopicName};

/// The topics a consumer reads.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopicSelection {
    /// These topics; a partitioned one stands for all its partitions. A topic that does not
    /// exist yet is created, as Pulsar creates topics on first use.
    Topics(Vec<TopicName>),
    /// The persistent topics of a namespace that a pattern matches, now and as they are
    /// created, checked every `refresh`.
    Pattern {
        /// Which topics.
        pattern: TopicPattern,
        /// How often the namespace's topics are listed again.
        refresh: Duration,
    },
}

impl std::fmt::Display for TopicSelection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TopicSelection::Topics(topics) => {
                for (i, topic) in topics.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{topic}")?;
                }
                Ok(())
            }
            TopicSelection::Pattern { pattern, .. } => write!(f, "pattern {pattern}"),
        }
    }
}

/// One topic a [`TopicsConsumer`] reads, and the model consumer reading it.
#[derive(Debug, Clone)]
struct Member {
    topic: TopicName,
    consumer: ConsumerId,
    ledger: u64,
}

/// A client consumer of several topics (or of one): see the [module documentation](self).
#[derive(Debug)]
pub struct TopicsConsumer {
    selection: TopicSelection,
    subscription: String,
    kind: SubscriptionType,
    options: ConsumerOptions,
    members: Vec<Member>,
    /// Where the next receive starts going round the members.
    cursor: usize,
    /// When it subscribed: a pattern's refresh ticks count from here.
    started: Instant,
    /// [`Cluster::topics_created`] when the topics were last listed for
    /// [`TopicsConsumer::next_refresh`], and the earliest creation time of a topic then found
    /// that the pattern matches and that is not read yet.
    listed: Option<(u64, Option<Instant>)>,
    /// After a refresh that failed to subscribe a topic: the tick that tries again (pulsar-rs
    /// logs the error and tries at its next tick).
    retry_at: Option<Instant>,
}

impl TopicsConsumer {
    /// Subscribe `subscription` of type `kind` to every topic `selection` names now, each
    /// with `options`. If one subscription is refused, those made are closed again and the
    /// refusal is returned.
    pub fn subscribe(
        cluster: &mut Cluster,
        selection: TopicSelection,
        subscription: &str,
        kind: SubscriptionType,
        options: ConsumerOptions,
        now: Instant,
    ) -> Result<TopicsConsumer, ModelError> {
        let mut consumer = TopicsConsumer {
            selection,
            subscription: subscription.to_owned(),
            kind,
            options,
            members: Vec::new(),
            cursor: 0,
            started: now,
            listed: None,
            retry_at: None,
        };
        let topics = consumer.topics_now(cluster);
        if let (_, Some(e)) = consumer.join(cluster, topics, now) {
            consumer.close(cluster, now);
            return Err(e);
        }
        Ok(consumer)
    }

    /// The topics the selection names at this moment, partitions expanded.
    fn topics_now(&self, cluster: &Cluster) -> Vec<TopicName> {
        match &self.selection {
            TopicSelection::Topics(topics) => {
                let mut all = Vec::new();
                for topic in topics {
                    match cluster.partition_names(topic) {
                        Some(partitions) => all.extend(partitions.iter().cloned()),
                        None => all.push(topic.clone()),
                    }
                }
                all
            }
            TopicSelection::Pattern { pattern, .. } => cluster
                .topics_of_namespace(pattern.namespace())
                .into_iter()
                .filter(|t| pattern.matches(t))
                .collect(),
        }
    }

    /// Subscribe to each of `topics` not read yet; the consumers added, and the first refusal
    /// if one was refused (the others are subscribed all the same).
    fn join(
        &mut self,
        cluster: &mut Cluster,
        topics: Vec<TopicName>,
        now: Instant,
    ) -> (Vec<ConsumerId>, Option<ModelError>) {
        let mut added = Vec::new();
        let mut refused = None;
        for topic in topics {
            if self.members.iter().any(|m| m.topic == topic) {
                continue;
            }
            let consumer = match cluster.subscribe(
                &topic,
                &self.subscription,
                self.kind,
                self.options.clone(),
                now,
            ) {
                Ok(consumer) => consumer,
                Err(e) => {
                    refused.get_or_insert(e);
                    continue;
                }
            };
            let ledger = cluster
                .ledger_of(&topic)
                .expect("subscribing created the topic");
            self.members.push(Member {
                topic,
                consumer,
                ledger,
            });
            added.push(consumer);
        }
        (added, refused)
    }

    /// The next delivery ready for the application, taking the topics in turn.
    #[inline]
    pub fn receive(&mut self, cluster: &mut Cluster, now: Instant) -> Option<Dispatched> {
        if let [only] = self.members.as_slice() {
            return cluster.receive(only.consumer, now);
        }
        let count = self.members.len();
        for step in 0..count {
            let i = (self.cursor + step) % count;
            if let Some(delivery) = cluster.receive(self.members[i].consumer, now) {
                self.cursor = (i + 1) % count;
                return Some(delivery);
            }
        }
        None
    }

    /// Whether its consumers have an ack timeout (pulsar-rs's unacked-message resend delay).
    pub fn has_ack_timeout(&self) -> bool {
        self.options.ack_timeout.is_some()
    }

    /// The application handed `messages`, received earlier, on to its own code at `now`: their
    /// ack timeouts start again ([`Cluster::restart_ack_timeout`]), each on the consumer of its
    /// topic. Without an ack timeout this does nothing.
    pub fn restart_ack_timeout<'a>(
        &self,
        cluster: &mut Cluster,
        messages: impl IntoIterator<Item = &'a MessageId>,
        now: Instant,
    ) {
        if !self.has_ack_timeout() {
            return;
        }
        for message in messages {
            if let Some(consumer) = self.consumer_of(message) {
                cluster.restart_ack_timeout(consumer, [message], now);
            }
        }
    }

    /// The model consumer that received `message` (the one to acknowledge it through).
    #[inline]
    pub fn consumer_of(&self, message: &MessageId) -> Option<ConsumerId> {
        if let [only] = self.members.as_slice() {
            return (only.ledger == message.ledger_id).then_some(only.consumer);
        }
        self.members
            .iter()
            .find(|m| m.ledger == message.ledger_id)
            .map(|m| m.consumer)
    }

    /// The model consumers, one per topic read, in the order they were subscribed.
    pub fn consumers(&self) -> impl Iterator<Item = ConsumerId> + '_ {
        self.members.iter().map(|m| m.consumer)
    }

    /// The topics read, in the order they were subscribed.
    pub fn topics(&self) -> impl Iterator<Item = &TopicName> + '_ {
        self.members.iter().map(|m| &m.topic)
    }

    /// Whether it reads a pattern (whose topics can change), rather than named topics.
    pub fn is_pattern(&self) -> bool {
        matches!(self.selection, TopicSelection::Pattern { .. })
    }

    /// The refresh period of a pattern (never zero), `None` for named topics.
    fn period(&self) -> Option<Duration> {
        match &self.selection {
            TopicSelection::Pattern { refresh, .. } => {
                Some((*refresh).max(Duration::from_millis(1)))
            }
            TopicSelection::Topics(_) => None,
        }
    }

    /// The refresh tick `k` (1 for the first after subscribing).
    fn tick(&self, period: Duration, k: u64) -> Instant {
        let nanos = period.as_nanos().saturating_mul(u128::from(k));
        self.started.saturating_add(Duration::from_nanos(
            u64::try_from(nanos).unwrap_or(u64::MAX),
        ))
    }

    /// How many ticks of `period` have come by `now`.
    fn ticks_by(&self, period: Duration, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.started).as_nanos();
        u64::try_from(since / period.as_nanos()).unwrap_or(u64::MAX)
    }

    /// When the next refresh that finds a topic is due: the first tick at or after the
    /// creation of a topic the pattern matches and that is not read yet (a past instant when
    /// that tick was missed). `None` for named topics, and while no such topic exists: no tick before the
    /// next topic appears would change anything.
    pub fn next_refresh(&mut self, cluster: &Cluster) -> Option<Instant> {
        let period = self.period()?;
        let created = cluster.topics_created();
        let earliest = match self.listed {
            Some((listed, earliest)) if listed == created => earliest,
            _ => {
                let earliest = self
                    .topics_now(cluster)
                    .iter()
                    .filter(|t| !self.members.iter().any(|m| &m.topic == *t))
                    .filter_map(|t| cluster.created_at(t))
                    .min();
                self.listed = Some((created, earliest));
                earliest
            }
        }?;
        // The first tick at or after the topic appeared (ticks are `started + k × period`,
        // k ≥ 1): the one that finds it.
        let k = self.ticks_by(period, earliest);
        let at_k = self.tick(period, k);
        let due = if k >= 1 && at_k == earliest {
            at_k
        } else {
            self.tick(period, k + 1)
        };
        Some(self.retry_at.map_or(due, |retry| retry.max(due)))
    }

    /// The last refresh tick at or before `now`, if one has come: list the topics again and
    /// subscribe the ones that match, are new, and existed at that tick. Returns the consumers
    /// added (none for named topics, or before the first tick) and the first refusal, if a
    /// topic could not be subscribed (it is tried again at the next tick).
    pub fn refresh(
        &mut self,
        cluster: &mut Cluster,
        now: Instant,
    ) -> (Vec<ConsumerId>, Option<ModelError>) {
        let Some(period) = self.period() else {
            return (Vec::new(), None);
        };
        let k = self.ticks_by(period, now);
        if k == 0 {
            return (Vec::new(), None);
        }
        let tick = self.tick(period, k);
        let found: Vec<TopicName> = self
            .topics_now(cluster)
            .into_iter()
            .filter(|t| cluster.created_at(t).is_some_and(|at| at <= tick))
            .collect();
        let (added, refused) = self.join(cluster, found, now);
        self.retry_at = refused.as_ref().map(|_| self.tick(period, k + 1));
        self.listed = None;
        (added, refused)
    }

    /// Close every consumer (see [`Cluster::close`]).
    pub fn close(&mut self, cluster: &mut Cluster, now: Instant) {
        for member in self.members.drain(..) {
            let _ = cluster.close(member.consumer, now);
        }
        self.selection = TopicSelection::Topics(Vec::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InitialPosition, OutgoingMessage};

    fn name(topic: &str) -> TopicName {
        TopicName::parse(topic).unwrap()
    }

    fn options() -> ConsumerOptions {
        ConsumerOptions {
            initial_position: InitialPosition::Earliest,
            ..ConsumerOptions::default()
        }
    }

    #[test]
    fn a_partitioned_topic_is_read_from_every_partition() {
        let mut cluster = Cluster::new();
        let now = Instant::ZERO;
        let orders = name("orders");
        cluster.create_partitioned_topic(&orders, 3, now).unwrap();
        let mut c = TopicsConsumer::subscribe(
            &mut cluster,
            TopicSelection::Topics(vec![orders.clone()]),
            "s",
            SubscriptionType::Shared,
            options(),
            now,
        )
        .unwrap();
        assert_eq!(c.consumers().count(), 3);
        for consumer in c.consumers().collect::<Vec<_>>() {
            cluster.flow(consumer, 10, now).unwrap();
        }
        for i in 0..3 {
            cluster
                .publish(
                    &orders.partition(i),
                    OutgoingMessage::new(format!("{i}")),
                    now,
                )
                .unwrap();
        }
        let mut seen = Vec::new();
        while let Some(d) = c.receive(&mut cluster, now) {
            assert!(c.consumer_of(&d.message_id).is_some());
            seen.push((d.topic.partition_index(), d.message_id.partition));
        }
        seen.sort();
        assert_eq!(seen, [(Some(0), 0), (Some(1), 1), (Some(2), 2)]);
        assert!(matches!(
            cluster.publish(&orders, OutgoingMessage::new("x"), now),
            Err(ModelError::PartitionedTopic { partitions: 3, .. })
        ));
    }

    #[test]
    fn a_pattern_picks_up_a_topic_created_later_at_its_next_refresh() {
        let mut cluster = Cluster::new();
        let refresh = Duration::from_secs(30);
        let pattern = TopicPattern::parse("orders-.*", None).unwrap();
        cluster
            .publish(
                &name("orders-eu"),
                OutgoingMessage::new("eu"),
                Instant::ZERO,
            )
            .unwrap();
        cluster
            .publish(&name("payments"), OutgoingMessage::new("no"), Instant::ZERO)
            .unwrap();
        let mut c = TopicsConsumer::subscribe(
            &mut cluster,
            TopicSelection::Pattern { pattern, refresh },
            "s",
            SubscriptionType::Shared,
            options(),
            Instant::ZERO,
        )
        .unwrap();
        assert_eq!(
            c.topics().map(|t| t.to_string()).collect::<Vec<_>>(),
            ["persistent://public/default/orders-eu"]
        );
        let at = |s| Instant::ZERO.saturating_add(Duration::from_secs(s));
        assert_eq!(c.next_refresh(&cluster), None, "nothing to find");
        cluster
            .publish(&name("orders-us"), OutgoingMessage::new("us"), at(10))
            .unwrap();
        assert_eq!(
            c.next_refresh(&cluster),
            Some(at(30)),
            "the next tick finds it"
        );
        assert!(c.refresh(&mut cluster, at(29)).0.is_empty(), "not yet");
        cluster
            .publish(&name("orders-late"), OutgoingMessage::new("late"), at(31))
            .unwrap();
        let (added, refused) = c.refresh(&mut cluster, at(31));
        assert_eq!(refused, None);
        assert_eq!(
            added.len(),
            1,
            "orders-us, not orders-late (created after the tick)"
        );
        assert_eq!(c.next_refresh(&cluster), Some(at(60)));
        assert_eq!(c.refresh(&mut cluster, at(60)).0.len(), 1);
        assert_eq!(c.next_refresh(&cluster), None);
        for consumer in c.consumers().collect::<Vec<_>>() {
            cluster.flow(consumer, 10, at(31)).unwrap();
        }
        let mut payloads = Vec::new();
        while let Some(d) = c.receive(&mut cluster, at(31)) {
            payloads.push(String::from_utf8(d.content.payload().to_vec()).unwrap());
        }
        payloads.sort();
        assert_eq!(
            payloads,
            ["eu", "late", "us"],
            "Earliest: what a topic got before it was found too"
        );
        c.close(&mut cluster, at(31));
        assert_eq!(c.consumers().count(), 0);
    }

    #[test]
    fn failover_has_an_active_consumer_per_partition() {
        let mut cluster = Cluster::new();
        let now = Instant::ZERO;
        let orders = name("orders");
        cluster.create_partitioned_topic(&orders, 2, now).unwrap();
        let instance = |cluster: &mut Cluster, consumer: &str| {
            TopicsConsumer::subscribe(
                cluster,
                TopicSelection::Topics(vec![orders.clone()]),
                "s",
                SubscriptionType::Failover,
                ConsumerOptions {
                    name: Some(consumer.to_owned()),
                    ..options()
                },
                now,
            )
            .unwrap()
        };
        let a = instance(&mut cluster, "a");
        let b = instance(&mut cluster, "b");
        // Pulsar sorts the consumers by name and gives partition n to number n % 2.
        let active: Vec<_> = (0..2)
            .map(|i| cluster.active_consumer(&orders.partition(i), "s").unwrap())
            .collect();
        let a_ids: Vec<_> = a.consumers().collect();
        let b_ids: Vec<_> = b.consumers().collect();
        assert!(a_ids.contains(&active[0]), "partition 0: the first by name");
        assert!(b_ids.contains(&active[1]), "partition 1: the second");
    }

    #[test]
    fn a_refused_pattern_subscription_is_tried_again_at_the_next_tick() {
        let mut cluster = Cluster::new();
        let refresh = Duration::from_secs(10);
        let at = |s| Instant::ZERO.saturating_add(Duration::from_secs(s));
        let mut c = TopicsConsumer::subscribe(
            &mut cluster,
            TopicSelection::Pattern {
                pattern: TopicPattern::parse("t-.*", None).unwrap(),
                refresh,
            },
            "s",
            SubscriptionType::Exclusive,
            options(),
            at(0),
        )
        .unwrap();
        // Someone else holds the new topic's subscription.
        let other = cluster
            .subscribe(
                &name("t-1"),
                "s",
                SubscriptionType::Exclusive,
                options(),
                at(1),
            )
            .unwrap();
        assert_eq!(c.next_refresh(&cluster), Some(at(10)));
        let (added, refused) = c.refresh(&mut cluster, at(10));
        assert!(added.is_empty());
        assert!(matches!(
            refused,
            Some(ModelError::ExclusiveConsumerBusy { .. })
        ));
        assert_eq!(c.next_refresh(&cluster), Some(at(20)), "not at once again");
        cluster.close(other, at(15)).unwrap();
        assert_eq!(c.refresh(&mut cluster, at(20)).0.len(), 1);
        assert_eq!(c.next_refresh(&cluster), None);
    }

    #[test]
    fn a_refused_subscription_closes_the_others() {
        let mut cluster = Cluster::new();
        let now = Instant::ZERO;
        let (a, b) = (name("a"), name("b"));
        // Someone else holds `b` exclusively.
        cluster
            .subscribe(&b, "s", SubscriptionType::Exclusive, options(), now)
            .unwrap();
        let refused = TopicsConsumer::subscribe(
            &mut cluster,
            TopicSelection::Topics(vec![a.clone(), b]),
            "s",
            SubscriptionType::Exclusive,
            options(),
            now,
        );
        assert!(matches!(
            refused,
            Err(ModelError::ExclusiveConsumerBusy { .. })
        ));
        // `a`'s consumer was closed again: another may take it.
        cluster
            .subscribe(&a, "s", SubscriptionType::Exclusive, options(), now)
            .unwrap();
    }
}

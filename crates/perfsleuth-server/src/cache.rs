//! Answers kept while the store has not changed. A page, a comparison or a
//! history is a function of the stored runs and the request alone, so one
//! computed after reading the store's revision ([`perfsleuth_store::Backend::revision`])
//! is the answer for as long as that revision holds: the next request with
//! the same key and revision is served it again instead of recomputing
//! (the project page took 9 ms of CPU, a comparison ~75 ms, a history of
//! 100 000 points 1.4 s; 32 clients on two cores cannot wait for that).
//! A commit anywhere in the store moves the revision, so nothing stale is
//! served; the cost of a needless move is one recomputation.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most answers kept, and most bytes (as their callers weigh them).
const MAX_ANSWERS: usize = 256;
const MAX_WEIGHT: usize = 128 << 20;

/// Longest an answer is served. The revision decides what is current; this
/// bounds something else: a few reads turn a store error into a weaker
/// answer rather than fail (a note or a noise band left out), and such an
/// answer should not outlive the hiccup by hours on a server that is
/// rarely written to.
const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// The kept answers, by (request key, store revision), and those being made.
#[derive(Default)]
pub(crate) struct Answers {
    inner: Mutex<Kept>,
    making: Mutex<HashMap<(String, String), Arc<Making>>>,
}

/// An answer one request is making, which others asking for it wait for
/// (32 clients opening one page would otherwise make it 16 times at once,
/// once per connection: a history of 100 000 points then took 11 s each).
#[derive(Default)]
struct Making {
    /// `Some` once made: the answer, or `None` when making it failed.
    made: Mutex<Option<Option<Arc<dyn Any + Send + Sync>>>>,
    ready: std::sync::Condvar,
}

/// What [`Answers::claim`] found.
pub(crate) enum Claim<'a, T> {
    /// The kept answer.
    Kept(Arc<T>),
    /// Another request is making it.
    Wait(Waiting),
    /// This caller is to make it.
    Mine(Maker<'a, T>),
}

/// An answer another request is making.
pub(crate) struct Waiting(Arc<Making>);

impl Waiting {
    /// Blocks until the maker is done: its answer, or `None` when it failed.
    pub(crate) fn wait<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let mut made = self.0.made.lock().unwrap_or_else(|p| p.into_inner());
        while made.is_none() {
            made = self.0.ready.wait(made).unwrap_or_else(|p| p.into_inner());
        }
        match made.as_ref() {
            Some(Some(answer)) => Arc::clone(answer).downcast::<T>().ok(),
            _ => None,
        }
    }
}

/// The making of an answer: whoever waits for it is woken however it
/// ends (made, failed, or a panic while making it).
pub(crate) struct Maker<'a, T> {
    answers: &'a Answers,
    id: (String, String),
    making: Arc<Making>,
    answer: Option<Arc<dyn Any + Send + Sync>>,
    _kind: std::marker::PhantomData<fn() -> T>,
}

impl<T: Send + Sync + 'static> Maker<'_, T> {
    /// Makes the answer with `make`, keeps it (weighed by `weigh`) and
    /// hands it to those waiting.
    pub(crate) fn make<E>(
        mut self,
        weigh: fn(&T) -> usize,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let answer = Arc::new(make()?);
        self.answers.put(
            self.id.0.clone(),
            self.id.1.clone(),
            Arc::clone(&answer),
            weigh(&answer),
        );
        self.answer = Some(answer.clone());
        Ok(answer)
    }
}

impl<T> Drop for Maker<'_, T> {
    fn drop(&mut self) {
        self.answers
            .making
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
        *self.making.made.lock().unwrap_or_else(|p| p.into_inner()) = Some(self.answer.take());
        self.making.ready.notify_all();
    }
}

#[derive(Default)]
struct Kept {
    map: HashMap<(String, String), Answer>,
    /// Insertion count: the oldest answer goes first when full.
    next: u64,
    weight: usize,
}

struct Answer {
    born: u64,
    made: std::time::Instant,
    weight: usize,
    value: Arc<dyn Any + Send + Sync>,
}

impl Answers {
    /// The answer kept for `key` at `revision`, if any.
    pub(crate) fn get<T: Send + Sync + 'static>(
        &self,
        key: &str,
        revision: &str,
    ) -> Option<Arc<T>> {
        let kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        kept.map
            .get(&(key.to_string(), revision.to_string()))
            .filter(|a| a.made.elapsed() < MAX_AGE)
            .and_then(|a| Arc::clone(&a.value).downcast::<T>().ok())
    }

    /// Keeps `value` for `key` at `revision`; an answer weighing more than
    /// a quarter of the budget is not kept (it would push out all others).
    pub(crate) fn put<T: Send + Sync + 'static>(
        &self,
        key: String,
        revision: String,
        value: Arc<T>,
        weight: usize,
    ) {
        if weight > MAX_WEIGHT / 4 {
            return;
        }
        let mut kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let born = kept.next;
        kept.next += 1;
        // Revisions only move on (a generation rises, a snapshot names
        // later transactions): the key's answers at other revisions will
        // not be asked for again, and go now (the same one too, replaced).
        let gone: usize = kept
            .map
            .iter()
            .filter(|((k, _), _)| *k == key)
            .map(|(_, a)| a.weight)
            .sum();
        kept.map.retain(|(k, _), _| *k != key);
        kept.weight = kept.weight - gone + weight;
        while !kept.map.is_empty() && (kept.map.len() >= MAX_ANSWERS || kept.weight > MAX_WEIGHT) {
            let oldest = kept
                .map
                .iter()
                .min_by_key(|(_, a)| a.born)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest
                && let Some(a) = kept.map.remove(&k)
            {
                kept.weight -= a.weight;
            }
        }
        kept.map.insert(
            (key, revision),
            Answer {
                born,
                made: std::time::Instant::now(),
                weight,
                value,
            },
        );
    }

    /// Without waiting: the answer kept for `key` at `revision`, or the
    /// making of it another request has begun (to wait for, after giving
    /// back what the wait should not hold, such as a store handle), or the
    /// making of it, now this caller's.
    pub(crate) fn claim<T: Send + Sync + 'static>(
        &self,
        key: &str,
        revision: &str,
    ) -> Claim<'_, T> {
        if let Some(kept) = self.get::<T>(key, revision) {
            return Claim::Kept(kept);
        }
        let id = (key.to_string(), revision.to_string());
        let mut all = self.making.lock().unwrap_or_else(|p| p.into_inner());
        // Kept in the meantime by a maker that has just finished.
        if let Some(kept) = self.get::<T>(key, revision) {
            return Claim::Kept(kept);
        }
        match all.get(&id) {
            Some(m) => Claim::Wait(Waiting(Arc::clone(m))),
            None => {
                let making = Arc::new(Making::default());
                all.insert(id.clone(), Arc::clone(&making));
                Claim::Mine(Maker {
                    answers: self,
                    id,
                    making,
                    answer: None,
                    _kind: std::marker::PhantomData,
                })
            }
        }
    }

    /// What the kept answers weigh, as counted.
    #[cfg(test)]
    fn weight(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).weight
    }

    /// How many answers are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer for `key` at `revision` as the server gets it (there in
    /// two steps, so as to wait without a store handle): the kept one, the
    /// one another request is making (waited for), or one `make` makes and
    /// keeps. A failure is not kept: those waiting try again themselves.
    fn get_or_make<T: Send + Sync + 'static, E>(
        a: &Answers,
        key: &str,
        revision: &str,
        weigh: fn(&T) -> usize,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        loop {
            match a.claim::<T>(key, revision) {
                Claim::Kept(answer) => return Ok(answer),
                Claim::Wait(making) => {
                    if let Some(answer) = making.wait::<T>() {
                        return Ok(answer);
                    }
                }
                Claim::Mine(maker) => return maker.make(weigh, make),
            }
        }
    }

    #[test]
    fn an_answer_is_served_at_its_revision_only() {
        let a = Answers::default();
        let text = |v: Option<Arc<String>>| v.map(|s| s.to_string());
        a.put("page".into(), "r1".into(), Arc::new(String::from("one")), 3);
        assert_eq!(text(a.get("page", "r1")).as_deref(), Some("one"));
        assert_eq!(a.get::<String>("page", "r2"), None, "another revision");
        assert_eq!(a.get::<String>("other", "r1"), None, "another key");
        assert_eq!(a.get::<u32>("page", "r1"), None, "another type");
        // A newer revision's answer replaces the key's older one, and its
        // weight with it.
        a.put("page".into(), "r2".into(), Arc::new(String::from("two")), 5);
        assert_eq!(a.get::<String>("page", "r1"), None);
        assert_eq!(text(a.get("page", "r2")).as_deref(), Some("two"));
        assert_eq!(a.len(), 1);
        a.put("page".into(), "r2".into(), Arc::new(String::from("two")), 5);
        assert_eq!(a.weight(), 5, "replaced, not added");
    }

    #[test]
    fn the_oldest_answers_go_first_and_heavy_ones_are_not_kept() {
        let a = Answers::default();
        for i in 0..MAX_ANSWERS + 10 {
            a.put(format!("k{i}"), "r".into(), Arc::new(i), 1);
        }
        assert!(a.len() <= MAX_ANSWERS);
        assert_eq!(a.get::<usize>("k0", "r"), None, "the oldest went");
        assert_eq!(
            a.get::<usize>(&format!("k{}", MAX_ANSWERS + 9), "r"),
            Some(Arc::new(MAX_ANSWERS + 9))
        );
        a.put("big".into(), "r".into(), Arc::new(0u8), MAX_WEIGHT);
        assert_eq!(a.get::<u8>("big", "r"), None);
        // Weight pushes out the oldest too.
        for i in 0..10usize {
            a.put(format!("w{i}"), "r".into(), Arc::new(i), MAX_WEIGHT / 4);
        }
        let kept: usize = (0..10)
            .filter(|i| a.get::<usize>(&format!("w{i}"), "r").is_some())
            .count();
        assert_eq!(kept, 4, "four quarters of the budget");
    }

    #[test]
    fn one_request_makes_an_answer_while_the_others_wait_for_it() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let a = Answers::default();
        let made = AtomicUsize::new(0);
        let answers: Vec<Result<Arc<String>, ()>> = std::thread::scope(|scope| {
            let tasks: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        get_or_make(&a, "page", "r", String::len, || {
                            made.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(100));
                            Ok(String::from("made once"))
                        })
                    })
                })
                .collect();
            tasks.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(
            answers
                .iter()
                .all(|r| r.as_deref().map(String::as_str) == Ok("made once"))
        );
        assert_eq!(made.load(Ordering::SeqCst), 1);
        // A failure is not kept: the next request makes it again.
        let failed: Result<Arc<String>, &str> =
            get_or_make(&a, "other", "r", String::len, || Err("no"));
        assert_eq!(failed, Err("no"));
        let again: Result<Arc<String>, &str> =
            get_or_make(&a, "other", "r", String::len, || Ok("yes".into()));
        assert_eq!(again.as_deref().map(String::as_str), Ok("yes"));
        // Too heavy to keep, it is still handed to the request that made it.
        let heavy: Result<Arc<String>, ()> =
            get_or_make(&a, "heavy", "r", |_| MAX_WEIGHT, || Ok("big".into()));
        assert_eq!(heavy.as_deref().map(String::as_str), Ok("big"));
        assert_eq!(a.get::<String>("heavy", "r"), None);
    }

    #[test]
    fn a_second_asker_is_told_to_wait_at_once_and_waits_apart() {
        // The server asks with a store handle and waits after giving it
        // back: claiming never blocks.
        let a = Answers::default();
        let Claim::Mine(maker) = a.claim::<String>("page", "r") else {
            panic!("the first asker makes it");
        };
        let Claim::Wait(waiting) = a.claim::<String>("page", "r") else {
            panic!("a second asker is told to wait");
        };
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| waiting.wait::<String>());
            let made = maker
                .make(String::len, || Ok::<_, ()>("made".to_string()))
                .unwrap();
            assert_eq!(made.as_str(), "made");
            let got = waiter.join().unwrap();
            assert_eq!(got.as_deref().map(String::as_str), Some("made"));
        });
        assert!(matches!(a.claim::<String>("page", "r"), Claim::Kept(_)));
        // A maker that fails tells its waiters so; the next asker makes it.
        let Claim::Mine(maker) = a.claim::<String>("other", "r") else {
            panic!("the first asker makes it");
        };
        let Claim::Wait(waiting) = a.claim::<String>("other", "r") else {
            panic!("a second asker is told to wait");
        };
        assert!(maker.make(String::len, || Err::<String, _>("no")).is_err());
        assert!(waiting.wait::<String>().is_none());
        assert!(matches!(a.claim::<String>("other", "r"), Claim::Mine(_)));
    }
}

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

#[derive(Default)]
struct Kept {
    map: HashMap<(String, String), Answer>,
    /// Insertion count: the oldest answer goes first when full.
    next: u64,
    weight: usize,
}

struct Answer {
    born: u64,
    weight: usize,
    value: Arc<dyn Any + Send + Sync>,
}

impl Answers {
    /// The answer kept for `key` at `revision`, if any.
    pub(crate) fn get<T: Clone + 'static>(&self, key: &str, revision: &str) -> Option<T> {
        let kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        kept.map
            .get(&(key.to_string(), revision.to_string()))
            .and_then(|a| a.value.downcast_ref::<T>())
            .cloned()
    }

    /// Keeps `value` for `key` at `revision`; an answer weighing more than
    /// a quarter of the budget is not kept (it would push out all others).
    pub(crate) fn put<T: Send + Sync + 'static>(
        &self,
        key: String,
        revision: String,
        value: T,
        weight: usize,
    ) {
        if weight > MAX_WEIGHT / 4 {
            return;
        }
        let mut kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let born = kept.next;
        kept.next += 1;
        // Answers at older revisions are not dropped at once: each SQLite
        // connection has revisions of its own, and the pool's connections
        // take turns; the oldest answers make room instead.
        kept.weight += weight;
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
                weight,
                value: Arc::new(value),
            },
        );
    }

    /// The answer for `key` at `revision`: the kept one, the one another
    /// request is making (waited for), or one `make` makes and keeps. A
    /// failure is not kept: those waiting try again themselves.
    pub(crate) fn get_or_make<T, E>(
        &self,
        key: &str,
        revision: &str,
        weigh: fn(&T) -> usize,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>
    where
        T: Clone + Send + Sync + 'static,
    {
        let id = (key.to_string(), revision.to_string());
        let mine = loop {
            if let Some(kept) = self.get::<T>(key, revision) {
                return Ok(kept);
            }
            let (making, mine) = {
                let mut all = self.making.lock().unwrap_or_else(|p| p.into_inner());
                match all.get(&id) {
                    Some(m) => (Arc::clone(m), false),
                    None => {
                        let m = Arc::new(Making::default());
                        all.insert(id.clone(), Arc::clone(&m));
                        (m, true)
                    }
                }
            };
            if mine {
                break making;
            }
            let mut made = making.made.lock().unwrap_or_else(|p| p.into_inner());
            while made.is_none() {
                made = making.ready.wait(made).unwrap_or_else(|p| p.into_inner());
            }
            if let Some(Some(answer)) = made.as_ref()
                && let Some(answer) = answer.downcast_ref::<T>()
            {
                return Ok(answer.clone());
            }
            // Its maker failed: try again (and perhaps make it here).
        };
        /// Wakes the waiting requests however making ends, a panic included.
        struct Done<'a> {
            answers: &'a Answers,
            id: (String, String),
            making: Arc<Making>,
            answer: Option<Arc<dyn Any + Send + Sync>>,
        }
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.answers
                    .making
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&self.id);
                *self.making.made.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(self.answer.take());
                self.making.ready.notify_all();
            }
        }
        let mut done = Done {
            answers: self,
            id,
            making: mine,
            answer: None,
        };
        let answer = make()?;
        self.put(
            key.to_string(),
            revision.to_string(),
            answer.clone(),
            weigh(&answer),
        );
        done.answer = Some(Arc::new(answer.clone()));
        drop(done);
        Ok(answer)
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

    #[test]
    fn an_answer_is_served_at_its_revision_only() {
        let a = Answers::default();
        a.put("page".into(), "r1".into(), String::from("one"), 3);
        assert_eq!(a.get::<String>("page", "r1").as_deref(), Some("one"));
        assert_eq!(a.get::<String>("page", "r2"), None, "another revision");
        assert_eq!(a.get::<String>("other", "r1"), None, "another key");
        assert_eq!(a.get::<u32>("page", "r1"), None, "another type");
        // Another revision's answer is kept beside it (another connection's).
        a.put("page".into(), "r2".into(), String::from("two"), 3);
        assert_eq!(a.get::<String>("page", "r1").as_deref(), Some("one"));
        assert_eq!(a.get::<String>("page", "r2").as_deref(), Some("two"));
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn the_oldest_answers_go_first_and_heavy_ones_are_not_kept() {
        let a = Answers::default();
        for i in 0..MAX_ANSWERS + 10 {
            a.put(format!("k{i}"), "r".into(), i, 1);
        }
        assert!(a.len() <= MAX_ANSWERS);
        assert_eq!(a.get::<usize>("k0", "r"), None, "the oldest went");
        assert_eq!(
            a.get::<usize>(&format!("k{}", MAX_ANSWERS + 9), "r"),
            Some(MAX_ANSWERS + 9)
        );
        a.put("big".into(), "r".into(), 0u8, MAX_WEIGHT);
        assert_eq!(a.get::<u8>("big", "r"), None);
        // Weight pushes out the oldest too.
        for i in 0..10usize {
            a.put(format!("w{i}"), "r".into(), i, MAX_WEIGHT / 4);
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
        let answers: Vec<Result<String, ()>> = std::thread::scope(|scope| {
            let tasks: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        a.get_or_make("page", "r", String::len, || {
                            made.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(100));
                            Ok(String::from("made once"))
                        })
                    })
                })
                .collect();
            tasks.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(answers.iter().all(|r| r.as_deref() == Ok("made once")));
        assert_eq!(made.load(Ordering::SeqCst), 1);
        // A failure is not kept: the next request makes it again.
        let failed: Result<String, &str> = a.get_or_make("other", "r", String::len, || Err("no"));
        assert_eq!(failed, Err("no"));
        let again: Result<String, &str> =
            a.get_or_make("other", "r", String::len, || Ok("yes".into()));
        assert_eq!(again.as_deref(), Ok("yes"));
        // Too heavy to keep, it is still handed to the request that made it.
        let heavy: Result<String, ()> =
            a.get_or_make("heavy", "r", |_| MAX_WEIGHT, || Ok("big".into()));
        assert_eq!(heavy.as_deref(), Ok("big"));
        assert_eq!(a.get::<String>("heavy", "r"), None);
    }
}

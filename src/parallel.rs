//! Running independent per-function work on the machine's cores. Every result depends only on
//! its own item, so the output is the same whatever the number of threads.
//!
//! Work is handed out in small batches from a shared queue, and the calling thread starts on it
//! at once: a helper thread that is slow to start (waking an idle core can take a millisecond on
//! a virtual machine) only takes fewer batches, it never delays the result.

use std::sync::Mutex;

/// Below this many items, one thread is quicker. The cost of more is not starting a thread (tens
/// of microseconds) but waiting for it to end: on a virtual machine whose other core is idle,
/// that can take a millisecond, as long as the whole work for a thousand functions. Measured
/// with `cargo bench --bench pass` (1,000 functions: 2.7 to 4.3 µs per function on one thread,
/// 3.5 to 4.6 on two).
const PARALLEL_MIN_ITEMS: usize = 4096;

/// Items per batch: enough work (tens of microseconds) to make taking the lock negligible, few
/// enough that the threads finish close together.
const BATCH: usize = 32;

fn threads_for(items: usize) -> usize {
    if items < PARALLEL_MIN_ITEMS {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Runs `work` on the calling thread and on `threads - 1` helpers, all taking batches from
/// `queue` until it is empty.
fn run_on_threads<Q: Send, W: Fn(&Mutex<Q>) + Sync>(threads: usize, queue: Q, work: W) {
    let queue = Mutex::new(queue);
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|| work(&queue));
        }
        work(&queue);
    });
}

/// The next batch from `queue`. A poisoned lock means another worker panicked; the scope
/// re-raises that panic, so this worker simply stops.
fn next_batch<I: Iterator>(queue: &Mutex<I>) -> Option<I::Item> {
    queue.lock().ok()?.next()
}

/// `f` applied to every item, in order; each thread has its own scratch state from `init`.
pub fn map<T: Sync, R: Send, S>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, &T) -> R + Sync,
) -> Vec<R> {
    let threads = threads_for(items.len());
    if threads < 2 {
        let mut state = init();
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| f(&mut state, i, item))
            .collect();
    }
    let done: Mutex<Vec<(usize, Vec<R>)>> = Mutex::new(Vec::new());
    run_on_threads(threads, items.chunks(BATCH).enumerate(), |queue| {
        let mut state = init();
        let mut mine = Vec::new();
        while let Some((b, batch)) = next_batch(queue) {
            let results = batch
                .iter()
                .enumerate()
                .map(|(j, item)| f(&mut state, b * BATCH + j, item))
                .collect();
            mine.push((b, results));
        }
        if let Ok(mut done) = done.lock() {
            done.append(&mut mine);
        }
    });
    let mut batches = done.into_inner().expect("a worker thread panicked");
    batches.sort_unstable_by_key(|&(b, _)| b);
    let mut out = Vec::with_capacity(items.len());
    for (_, results) in batches {
        out.extend(results);
    }
    out
}

/// `f` applied to every item in place.
pub fn for_each_mut<T: Send>(items: &mut [T], f: impl Fn(usize, &mut T) + Sync) {
    let threads = threads_for(items.len());
    if threads < 2 {
        items
            .iter_mut()
            .enumerate()
            .for_each(|(i, item)| f(i, item));
        return;
    }
    run_on_threads(threads, items.chunks_mut(BATCH).enumerate(), |queue| {
        while let Some((b, batch)) = next_batch(queue) {
            for (j, item) in batch.iter_mut().enumerate() {
                f(b * BATCH + j, item);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_keeps_the_order_of_items() {
        let items: Vec<usize> = (0..10_000).collect();
        let out = map(
            &items,
            || 0usize,
            |calls, i, &x| {
                *calls += 1;
                assert_eq!(i, x);
                x * 2
            },
        );
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
    }

    #[test]
    fn for_each_mut_visits_every_item_once_with_its_index() {
        let mut items = vec![0usize; 10_000];
        for_each_mut(&mut items, |i, x| *x += i + 1);
        assert!(items.iter().enumerate().all(|(i, &x)| x == i + 1));
    }
}

//! Running independent per-function work on the machine's cores, with rayon. Every result
//! depends only on its own item, so the output is the same whatever the number of threads.
//!
//! Small modules run on the calling thread without rayon: see [`PARALLEL_MIN_ITEMS`] (and
//! [`PARALLEL_MIN_WEIGHT`] for work counted in instructions). Larger ones are cut into batches
//! that the calling thread and tasks on rayon's pool (the pool an embedder such as wasmtime
//! already runs) take in turn; results are put back in item order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Below this many items, one thread is quicker. The cost of more is not starting a thread (tens
/// of microseconds) but waiting for it to end: on a virtual machine whose other core is idle,
/// that can take a millisecond, as long as the whole work for a thousand functions. Measured
/// with `cargo bench --bench pass` (1,000 functions: 2.7 to 4.3 µs per function on one thread,
/// 3.5 to 4.6 on two).
const PARALLEL_MIN_ITEMS: usize = 4096;

/// Items per batch: enough work (tens of microseconds) to make taking a batch negligible, few
/// enough that the threads finish close together.
const BATCH: usize = 32;

/// [`map_weighted`]'s threshold: work of about this many instructions (over half a millisecond
/// of a fingerprint walk) is worth a second thread.
const PARALLEL_MIN_WEIGHT: usize = 20_000;

/// [`map_weighted`]'s batch: about this many instructions.
const BATCH_WEIGHT: usize = 2_000;

/// The most threads any phase uses: more wait on memory, not on work. A pool of more is never
/// made ([`crate::MergeOptions::threads`]).
pub(crate) const MAX_THREADS: usize = 8;

/// Threads to use for `items` items: at most [`MAX_THREADS`].
fn threads_for(items: usize) -> usize {
    if items < PARALLEL_MIN_ITEMS {
        return 1;
    }
    pool_threads().min(MAX_THREADS)
}

/// Runs `work` on the calling thread and on `threads - 1` tasks of rayon's pool. The calling
/// thread starts at once, instead of handing everything to the pool and waiting for a worker to
/// wake: a worker that is slow to start only takes fewer batches (`par_iter` was 5% slower at
/// 10,000 and 100,000 functions, measured with the binary's `--time-passes`).
#[cfg(feature = "parallel")]
fn run_on_pool(threads: usize, work: impl Fn() + Sync) {
    rayon::in_place_scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|_| work());
        }
        work();
    });
}

/// Without the `parallel` feature there is one thread: `work` runs here, once.
#[cfg(not(feature = "parallel"))]
fn run_on_pool(_threads: usize, work: impl Fn() + Sync) {
    work();
}

/// The threads of the pool the caller runs on (one without the `parallel` feature).
fn pool_threads() -> usize {
    #[cfg(feature = "parallel")]
    return rayon::current_num_threads();
    #[cfg(not(feature = "parallel"))]
    return 1;
}

#[cfg(feature = "parallel")]
use rayon::join;

/// `a` then `b`, on this thread (no `parallel` feature).
#[cfg(not(feature = "parallel"))]
#[cfg_attr(not(feature = "reader"), allow(dead_code))]
fn join<A, B>(a: impl FnOnce() -> A, b: impl FnOnce() -> B) -> (A, B) {
    (a(), b())
}

/// `f` applied to every item, in order; each thread has its own scratch state from `init`.
pub fn map<T: Sync, R: Send, S>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, &T) -> R + Sync,
) -> Vec<R> {
    let threads = threads_for(items.len());
    if threads < 2 {
        return map_here(items, init, f);
    }
    let batches: Vec<(usize, &[T])> = items
        .chunks(BATCH)
        .enumerate()
        .map(|(b, batch)| (b * BATCH, batch))
        .collect();
    map_batches(threads, &batches, init, f)
}

/// `f` applied to every item, in order, for items whose work differs widely (functions of a
/// few instructions and of thousands): `weight` estimates an item's work; threads are used when
/// the total is at least [`PARALLEL_MIN_WEIGHT`], in batches of about [`BATCH_WEIGHT`].
pub fn map_weighted<T: Sync, R: Send, S>(
    items: &[T],
    weight: impl Fn(&T) -> usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, &T) -> R + Sync,
) -> Vec<R> {
    let mut batches: Vec<(usize, &[T])> = Vec::new();
    let (mut start, mut in_batch, mut total) = (0, 0, 0);
    for (i, item) in items.iter().enumerate() {
        let w = weight(item).max(1);
        in_batch += w;
        total += w;
        if in_batch >= BATCH_WEIGHT {
            batches.push((start, &items[start..=i]));
            start = i + 1;
            in_batch = 0;
        }
    }
    if start < items.len() {
        batches.push((start, &items[start..]));
    }
    let threads = if total < PARALLEL_MIN_WEIGHT || batches.len() < 2 {
        1
    } else {
        pool_threads().min(MAX_THREADS)
    };
    if threads < 2 {
        return map_here(items, init, f);
    }
    map_batches(threads, &batches, init, f)
}

/// `f` applied to every item, in order, on the calling thread.
fn map_here<T, R, S>(
    items: &[T],
    init: impl Fn() -> S,
    f: impl Fn(&mut S, usize, &T) -> R,
) -> Vec<R> {
    let mut state = init();
    items
        .iter()
        .enumerate()
        .map(|(i, item)| f(&mut state, i, item))
        .collect()
}

/// Runs `f` over `batches` (each with the index of its first item) on `threads` threads and
/// puts the results back in item order.
fn map_batches<T: Sync, R: Send, S>(
    threads: usize,
    batches: &[(usize, &[T])],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, &T) -> R + Sync,
) -> Vec<R> {
    let items: usize = batches.iter().map(|(_, b)| b.len()).sum();
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Vec<R>)>> = Mutex::new(Vec::with_capacity(batches.len()));
    run_on_pool(threads, || {
        let mut state = init();
        let mut mine = Vec::new();
        loop {
            let b = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(first, batch)) = batches.get(b) else {
                break;
            };
            let results = batch
                .iter()
                .enumerate()
                .map(|(j, item)| f(&mut state, first + j, item))
                .collect();
            mine.push((b, results));
        }
        done.lock()
            .expect("no worker panics while holding it")
            .append(&mut mine);
    });
    let mut batches = done
        .into_inner()
        .expect("no worker panics while holding it");
    batches.sort_unstable_by_key(|&(b, _)| b);
    let mut out = Vec::with_capacity(items);
    for (_, results) in batches {
        out.extend(results);
    }
    out
}

/// `f` applied to every item, in order, for items that are each a large piece of work (pieces
/// of a file, each of many functions): every item is a batch of its own, and two items are
/// enough to use the pool.
#[cfg_attr(not(any(feature = "reader", feature = "verify")), allow(dead_code))]
pub fn map_large<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = pool_threads().min(MAX_THREADS).min(items.len());
    if threads < 2 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
    run_on_pool(threads, || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let result = f(item);
            done.lock()
                .expect("no worker panics while holding it")
                .push((i, result));
        }
    });
    let mut results = done
        .into_inner()
        .expect("no worker panics while holding it");
    results.sort_unstable_by_key(|&(i, _)| i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// `a` and `b`, on two threads of the pool when `worth_it` (and the pool has two), else one
/// after the other on the calling thread.
#[cfg_attr(not(feature = "reader"), allow(dead_code))]
pub fn join_if<A: Send, B: Send>(
    worth_it: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if worth_it && pool_threads() > 1 {
        join(a, b)
    } else {
        (a(), b())
    }
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
    let batches: Mutex<Vec<(usize, &mut [T])>> =
        Mutex::new(items.chunks_mut(BATCH).enumerate().rev().collect());
    run_on_pool(threads, || {
        loop {
            let Some((b, batch)) = batches
                .lock()
                .expect("no worker panics while holding it")
                .pop()
            else {
                break;
            };
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
    fn map_weighted_keeps_the_order_of_items_of_any_weight() {
        // Weights from 1 to several batches' worth, so that batches hold one item or many.
        let items: Vec<usize> = (0..3_000).collect();
        let weight = |&x: &usize| {
            if x % 97 == 0 {
                3 * BATCH_WEIGHT
            } else {
                x % 13
            }
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let out = pool.install(|| map_weighted(&items, weight, || (), |_, i, &x| (i, x * 3)));
        let expected: Vec<(usize, usize)> = items.iter().map(|&x| (x, x * 3)).collect();
        assert_eq!(out, expected);
    }

    #[test]
    fn for_each_mut_visits_every_item_once_with_its_index() {
        let mut items = vec![0usize; 10_000];
        for_each_mut(&mut items, |i, x| *x += i + 1);
        assert!(items.iter().enumerate().all(|(i, &x)| x == i + 1));
    }
}

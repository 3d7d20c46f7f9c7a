//! Running independent per-function work on the machine's cores. Every result depends only on
//! its own item, so the output is the same whatever the number of threads.

/// Below this many items, one thread is quicker than starting others (the work per item is a
/// few microseconds; starting a thread costs tens).
const PARALLEL_MIN_ITEMS: usize = 256;

fn threads_for(items: usize) -> usize {
    if items < PARALLEL_MIN_ITEMS {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
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
    let chunk = items.len().div_ceil(threads);
    let run = |c: usize, part: &[T]| {
        let mut state = init();
        part.iter()
            .enumerate()
            .map(|(j, item)| f(&mut state, c * chunk + j, item))
            .collect::<Vec<R>>()
    };
    std::thread::scope(|scope| {
        let run = &run;
        let mut parts = items.chunks(chunk).enumerate();
        let (_, first) = parts.next().expect("at least one item");
        // The calling thread takes the first part instead of waiting idle.
        let others: Vec<_> = parts
            .map(|(c, part)| scope.spawn(move || run(c, part)))
            .collect();
        let mut out = run(0, first);
        for handle in others {
            out.extend(handle.join().expect("a worker thread panicked"));
        }
        out
    })
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
    let chunk = items.len().div_ceil(threads);
    let run = |c: usize, part: &mut [T]| {
        for (j, item) in part.iter_mut().enumerate() {
            f(c * chunk + j, item);
        }
    };
    std::thread::scope(|scope| {
        let run = &run;
        let mut parts = items.chunks_mut(chunk).enumerate();
        let (_, first) = parts.next().expect("at least one item");
        for (c, part) in parts {
            scope.spawn(move || run(c, part));
        }
        run(0, first);
    });
}

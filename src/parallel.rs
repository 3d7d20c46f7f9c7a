//! Running independent per-function work on the machine's cores. Every result depends only on
//! its own item, so the output is the same whatever the number of threads.

/// Below this many items, one thread is quicker than starting others.
const PARALLEL_MIN_ITEMS: usize = 4096;

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
    std::thread::scope(|scope| {
        let (f, init) = (&f, &init);
        let handles: Vec<_> = items
            .chunks(chunk)
            .enumerate()
            .map(|(c, part)| {
                scope.spawn(move || {
                    let mut state = init();
                    part.iter()
                        .enumerate()
                        .map(|(j, item)| f(&mut state, c * chunk + j, item))
                        .collect::<Vec<R>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a worker thread panicked"))
            .collect()
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
    std::thread::scope(|scope| {
        let f = &f;
        for (c, part) in items.chunks_mut(chunk).enumerate() {
            scope.spawn(move || {
                for (j, item) in part.iter_mut().enumerate() {
                    f(c * chunk + j, item);
                }
            });
        }
    });
}

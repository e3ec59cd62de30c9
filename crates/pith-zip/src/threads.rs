//! Work split across scoped threads: the first item on the calling
//! thread, the others on threads of their own, results in item order. A
//! panic on any thread is resumed on the caller.

/// `f` of every item of `work`, in order.
pub(crate) fn on_threads<W: Send, T: Send>(work: Vec<W>, f: impl Fn(W) -> T + Sync) -> Vec<T> {
    let mut work = work.into_iter();
    let Some(first) = work.next() else {
        return Vec::new();
    };
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = work.map(|w| scope.spawn(move || f(w))).collect();
        let mut all = vec![f(first)];
        for h in handles {
            match h.join() {
                Ok(done) => all.push(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    })
}

//! What the check found, over the whole module.

use super::outcome::Mismatch;
use std::collections::BTreeMap;

/// What the check found.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// Functions checked: run on both sides, or unchanged.
    pub functions: usize,
    /// Argument tuples run (each on both sides), inconclusive and unsupported ones included.
    pub runs: usize,
    /// Runs in which a side hit the fuel, depth or stack limit.
    pub inconclusive: usize,
    /// Runs the interpreter could not complete on a side.
    pub unsupported: usize,
    /// Runs that ran to the end only on another fill of memory nothing stored to (counted
    /// among the runs that ended): their first fill kept them going.
    pub on_other_fills: usize,
    /// What the unsupported runs stopped at (an opcode, or what else), and how many.
    pub unsupported_at: BTreeMap<String, usize>,
    /// Defined functions not run: a signature the interpreter cannot call.
    pub skipped: usize,
    /// Functions whose runs stopped early, after `max_inconclusive` inconclusive ones.
    pub cut_short: usize,
    /// Functions every run of which ran to the end on both sides.
    pub fully_checked: usize,
    /// Functions some runs of which ran to the end, not all.
    pub partly_checked: usize,
    /// Functions no run of which ran to the end on both sides (skipped ones included).
    pub unchecked: usize,
    /// Functions not run because nothing they run changed: the same body, calling no address,
    /// calling only functions of which the same holds (their runs would be the same). A
    /// function whose body is the same but that calls one the merge changed is run, and counts
    /// as fully, partly or not checked.
    pub unchanged: usize,
    /// Every run that behaved differently.
    pub mismatches: Vec<Mismatch>,
}

impl VerifyReport {
    /// Whether nothing behaved differently.
    pub fn is_ok(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// `verify: N functions, R runs, M mismatches (I inconclusive, U unsupported, S skipped);
    /// F fully checked, P partly, Z not at all, C unchanged`, then the share of all functions
    /// (skipped ones included) fully checked, and fully checked or unchanged with all they call
    /// (`; of T functions: 823 (84.0 %) fully checked, 963 (98.3 %) fully checked or unchanged
    /// with all they call`, see [`VerifyReport::fully_checked_or_unchanged`]), then how many runs ended
    /// only on another fill of memory when some did (`; O runs ended on another fill`), then
    /// what the unsupported runs stopped at, most frequent first (`; unsupported:
    /// get_frame_pointer 12, ...`).
    pub fn summary(&self) -> String {
        let mut text = format!(
            "verify: {} functions, {} runs, {} mismatches ({} inconclusive, {} unsupported, \
             {} skipped); {} fully checked, {} partly, {} not at all, {} unchanged",
            self.functions,
            self.runs,
            self.mismatches.len(),
            self.inconclusive,
            self.unsupported,
            self.skipped,
            self.fully_checked,
            self.partly_checked,
            self.unchecked,
            self.unchanged
        );
        let all = self.all_functions();
        if all > 0 {
            let share = |n: usize| 100.0 * n as f64 / all as f64;
            let (full, vouched) = (self.fully_checked, self.fully_checked_or_unchanged());
            text.push_str(&format!(
                "; of {all} functions: {full} ({:.1} %) fully checked, {vouched} ({:.1} %) \
                 fully checked or unchanged with all they call",
                share(full),
                share(vouched)
            ));
        }
        if self.on_other_fills > 0 {
            text.push_str(&format!(
                "; {} runs ended on another fill",
                self.on_other_fills
            ));
        }
        let mut at: Vec<(&String, &usize)> = self.unsupported_at.iter().collect();
        at.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (i, (what, n)) in at.iter().enumerate() {
            text.push_str(if i == 0 { "; unsupported: " } else { ", " });
            text.push_str(&format!("{what} {n}"));
        }
        text
    }

    /// Every function of the module the check looked at: those it checked (run, or unchanged)
    /// and those it skipped (a signature the interpreter cannot call).
    pub fn all_functions(&self) -> usize {
        self.functions + self.skipped
    }

    /// Functions whose every behaviour the check vouches for: fully checked (every run ran to
    /// the end on both sides, the same), or *unchanged with all they call* — the same body on
    /// both sides, calling no address, and every function it calls or takes the address of
    /// unchanged with all it calls too, so that each of its runs would be the same on both
    /// sides ([`VerifyReport::unchanged`]; not run). A function the merge left as it was that
    /// calls one the merge changed is not unchanged: it is run, and counts only when fully
    /// checked.
    pub fn fully_checked_or_unchanged(&self) -> usize {
        self.fully_checked + self.unchanged
    }

    /// Runs that ran to the end on both sides.
    pub fn completed_runs(&self) -> usize {
        self.runs - self.inconclusive - self.unsupported
    }

    /// A warning when most runs could not be run to the end, so that "0 mismatches" is not
    /// taken for more than it is.
    pub fn coverage_warning(&self) -> Option<String> {
        if self.runs == 0 && self.skipped > 0 {
            return Some(format!(
                "warning: --verify ran nothing: {} functions have signatures the interpreter \
                 cannot call (struct arguments, vectors wider than 128 bits): this merge was \
                 not checked",
                self.skipped
            ));
        }
        let done = self.completed_runs();
        (self.runs > 0 && done * 2 < self.runs).then(|| {
            format!(
                "warning: --verify ran only {done} of {} runs to the end ({} inconclusive, {} \
                 unsupported by the interpreter): most of this merge was not checked",
                self.runs, self.inconclusive, self.unsupported
            )
        })
    }
}

impl VerifyReport {
    /// Adds what `other` found (functions after this report's).
    pub(super) fn absorb(&mut self, other: VerifyReport) {
        self.functions += other.functions;
        self.runs += other.runs;
        self.inconclusive += other.inconclusive;
        self.unsupported += other.unsupported;
        self.on_other_fills += other.on_other_fills;
        for (what, n) in other.unsupported_at {
            *self.unsupported_at.entry(what).or_default() += n;
        }
        self.skipped += other.skipped;
        self.cut_short += other.cut_short;
        self.fully_checked += other.fully_checked;
        self.partly_checked += other.partly_checked;
        self.unchecked += other.unchecked;
        self.unchanged += other.unchanged;
        self.mismatches.extend(other.mismatches);
    }

    /// Counts a function as fully, partly or not checked, from its `runs` (out of `planned`),
    /// `incomplete` of which did not run to the end on both sides.
    pub(super) fn count_coverage(&mut self, runs: usize, incomplete: usize, planned: usize) {
        match (runs, incomplete) {
            // A function no run checked (no runs asked for) is not checked at all.
            (r, 0) if r >= planned && r > 0 => self.fully_checked += 1,
            (r, i) if i < r => self.partly_checked += 1,
            _ => self.unchecked += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shares_are_of_all_functions_skipped_ones_included() {
        let report = VerifyReport {
            functions: 7,
            skipped: 1,
            fully_checked: 4,
            partly_checked: 1,
            unchanged: 2,
            ..VerifyReport::default()
        };
        assert_eq!(report.all_functions(), 8);
        assert_eq!(report.fully_checked_or_unchanged(), 6);
        assert!(
            report.summary().ends_with(
                "; of 8 functions: 4 (50.0 %) fully checked, 6 (75.0 %) fully checked or \
                 unchanged with all they call"
            ),
            "{}",
            report.summary()
        );
        let empty = VerifyReport::default().summary();
        assert!(!empty.contains("of 0 functions"), "{empty}");
    }
}

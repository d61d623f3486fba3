//! The availability profile: free processors as a step function of time,
//! from `now` on.
//!
//! A breakpoint at time `k` says "from `k` until the next breakpoint,
//! `free` processors are free"; the last breakpoint's value holds forever.
//! The breakpoints are the keys of a treap (a binary search tree balanced
//! by random priorities) whose nodes also hold, for their subtree, the least
//! and the greatest value and an addition still to be passed down to the
//! children (lazy propagation). So, with `n` breakpoints, each of these
//! costs O(log n) expected:
//!
//! - `occupy` / `release`: add or take back a job's processors over
//!   `[start, end)` (make or count the breakpoints at both ends, then walk
//!   the paths to them, leaving the addition on the whole subtrees in
//!   between);
//! - `first_at_least` / `first_below`: the first breakpoint from a time on
//!   whose value is at least / below a number (one descent, guided by the
//!   subtree maxima / minima);
//! - `earliest`: the earliest start of a job in the profile, one pair of
//!   descents per hole that is too short for it.
//!
//! Each breakpoint after `now` counts the intervals that begin or end there
//! (`refs`) and is removed when none does any more (the values on both sides
//! are then equal), so the tree holds at most two breakpoints per running job
//! and reservation. `advance` drops the breakpoints of the past.

/// No node.
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    /// The breakpoint's time.
    key: i64,
    /// Free processors from `key` to the next breakpoint (with every
    /// pending addition of this node's ancestors still to be added).
    val: i64,
    /// Least `val` in the subtree (same convention).
    min: i64,
    /// Greatest `val` in the subtree.
    max: i64,
    /// Addition owed to the children (already in this node's fields).
    lazy: i64,
    /// Intervals beginning or ending at `key`.
    refs: u32,
    /// Heap priority.
    prio: u32,
    left: u32,
    right: u32,
}

/// Free processors over time, from `now` on. See the module doc.
#[derive(Clone, Debug)]
pub struct Profile {
    nodes: Vec<Node>,
    free_nodes: Vec<u32>,
    root: u32,
    now: i64,
    total: i64,
    seed: u64,
}

impl Profile {
    /// An idle machine of `total` processors at time `now`.
    pub fn new(total: i64, now: i64) -> Profile {
        let mut p = Profile {
            nodes: Vec::new(),
            free_nodes: Vec::new(),
            root: NIL,
            now,
            total,
            seed: 0x9e37_79b9_7f4a_7c15,
        };
        p.root = p.alloc(now, total, 0);
        p
    }

    /// Makes this profile a copy of `other`, reusing this one's memory.
    pub fn copy_from(&mut self, other: &Profile) {
        self.nodes.clone_from(&other.nodes);
        self.free_nodes.clone_from(&other.free_nodes);
        self.root = other.root;
        self.now = other.now;
        self.total = other.total;
        self.seed = other.seed;
    }

    /// The current time: the first breakpoint.
    pub fn now(&self) -> i64 {
        self.now
    }

    /// Breakpoints held (at least the one at `now`).
    pub fn breakpoints(&self) -> usize {
        self.nodes.len() - self.free_nodes.len()
    }

    /// Moves `now` to `t` (not earlier than `now`), forgetting the past.
    pub fn advance(&mut self, t: i64) {
        assert!(t >= self.now, "time goes forward");
        if t == self.now {
            return;
        }
        let v = self.value_at(t);
        let (past, rest) = self.split(self.root, t);
        self.free_subtree(past);
        self.now = t;
        self.root = if rest != NIL && self.min_key(rest) == t {
            rest
        } else {
            let anchor = self.alloc(t, v, 0);
            self.merge(anchor, rest)
        };
    }

    /// Free processors at time `t` (at least `now`).
    pub fn value_at(&self, t: i64) -> i64 {
        debug_assert!(t >= self.now);
        let mut n = self.root;
        let mut acc = 0;
        let mut best = self.total;
        while n != NIL {
            let node = &self.nodes[n as usize];
            if node.key <= t {
                best = node.val + acc;
                acc += node.lazy;
                n = node.right;
            } else {
                acc += node.lazy;
                n = node.left;
            }
        }
        best
    }

    /// Takes `procs` processors over `[start, end)` (`now <= start < end`).
    pub fn occupy(&mut self, start: i64, end: i64, procs: i64) {
        debug_assert!(self.now <= start && start < end, "{start}..{end}");
        self.touch(start);
        self.touch(end);
        self.add(self.root, i64::MIN, i64::MAX, start, end, -procs);
    }

    /// Gives back `procs` processors over `[start, end)` that an `occupy`
    /// of the same interval took (a running job ending early gives back
    /// `[now, end)` of its `[start, end)`: `start` is then `now`, and only
    /// `end` is counted off). `start == end` only counts `end` off.
    pub fn release(&mut self, start: i64, end: i64, procs: i64) {
        debug_assert!(self.now <= start && start <= end, "{start}..{end}");
        if start < end {
            self.add(self.root, i64::MIN, i64::MAX, start, end, procs);
            if start > self.now {
                self.untouch(start);
            }
        }
        self.untouch(end);
    }

    /// The first breakpoint at or after `from` whose value is at least
    /// `need`.
    pub fn first_at_least(&self, from: i64, need: i64) -> Option<i64> {
        self.find::<true>(from, need)
    }

    /// The first breakpoint at or after `from` whose value is below `need`.
    pub fn first_below(&self, from: i64, need: i64) -> Option<i64> {
        self.find::<false>(from, need)
    }

    /// The earliest time from `now` on at which `need` processors are free
    /// for `len` seconds. Always found when `need <= total`: every interval
    /// ends.
    pub fn earliest(&self, need: i64, len: i64) -> i64 {
        self.earliest_in(need, len, i64::MAX, self.now, i64::MAX)
            .expect("a job no wider than the machine fits at the end")
    }

    /// The earliest start in `[lo, hi)` (and from `now` on) of a job of
    /// `need` processors for `len` seconds, where the job itself holds
    /// `[own, own + len)` (`i64::MAX`: nothing) and `hi <= own`; only
    /// breakpoints are tried, so `lo` must be `now` or a time before which
    /// no start is wanted (the earliest start of all is always `now` or a
    /// breakpoint: one second earlier, fewer processors were free).
    ///
    /// The job's own processors are in the profile's values from `own` on,
    /// and a window starting before `own` ends before `own + len`: counted
    /// as free, they make every value there enough, so a window is only
    /// checked up to `own`.
    pub fn earliest_in(&self, need: i64, len: i64, own: i64, lo: i64, hi: i64) -> Option<i64> {
        debug_assert!(hi <= own);
        let mut x = self.first_at_least(lo.max(self.now), need)?;
        loop {
            if x >= hi {
                return None;
            }
            match self.first_below(x + 1, need) {
                Some(y) if y < x.saturating_add(len).min(own) => {
                    x = self.first_at_least(y, need)?;
                }
                _ => return Some(x),
            }
        }
    }

    /// The breakpoints and their values, in order (for tests and checks).
    pub fn steps(&self) -> Vec<(i64, i64)> {
        let mut out = Vec::with_capacity(self.breakpoints());
        self.collect(self.root, 0, &mut out);
        out
    }

    /// Checks the tree's invariants (order, heap, subtree extrema, the
    /// first key is `now`, no two equal neighbours without a reference);
    /// panics on a violation. For tests.
    pub fn check(&self) {
        let steps = self.steps();
        assert_eq!(steps.first().map(|s| s.0), Some(self.now));
        for w in steps.windows(2) {
            assert!(w[0].0 < w[1].0, "keys in order");
        }
        for &(k, v) in &steps {
            assert!((0..=self.total).contains(&v), "value {v} at {k}");
        }
        assert_eq!(steps.last().map(|s| s.1), Some(self.total), "ends free");
        self.check_node(self.root, 0);
    }

    fn check_node(&self, n: u32, acc: i64) -> (i64, i64) {
        if n == NIL {
            return (i64::MAX, i64::MIN);
        }
        let node = self.nodes[n as usize];
        let (lmin, lmax) = self.check_node(node.left, acc + node.lazy);
        let (rmin, rmax) = self.check_node(node.right, acc + node.lazy);
        for c in [node.left, node.right] {
            if c != NIL {
                assert!(self.nodes[c as usize].prio <= node.prio, "heap order");
            }
        }
        let min = (node.val + acc).min(lmin).min(rmin);
        let max = (node.val + acc).max(lmax).max(rmax);
        assert_eq!(node.min + acc, min, "subtree minimum at {}", node.key);
        assert_eq!(node.max + acc, max, "subtree maximum at {}", node.key);
        (min, max)
    }

    fn collect(&self, n: u32, acc: i64, out: &mut Vec<(i64, i64)>) {
        if n == NIL {
            return;
        }
        let node = &self.nodes[n as usize];
        self.collect(node.left, acc + node.lazy, out);
        out.push((node.key, node.val + acc));
        self.collect(node.right, acc + node.lazy, out);
    }

    /// The first key >= `from` whose value is >= `need` (`AT_LEAST`) or
    /// < `need` (otherwise), without recursion.
    ///
    /// The answer is the first in order of the keys >= `from`, which are,
    /// on the path that looks for `from`, the nodes where the path turns
    /// left, each followed in order by its right subtree, the deeper ones
    /// first. So one walk down that path finds the deepest such node whose
    /// own value or right subtree (by its extremum) holds an answer, and a
    /// second walk finds the first answer in that subtree.
    fn find<const AT_LEAST: bool>(&self, from: i64, need: i64) -> Option<i64> {
        let ok = |v: i64| if AT_LEAST { v >= need } else { v < need };
        // Whether subtree `c`, under additions `acc`, holds an answer.
        let holds = |c: u32, acc: i64| {
            c != NIL && {
                let child = &self.nodes[c as usize];
                ok(if AT_LEAST { child.max } else { child.min } + acc)
            }
        };
        let (mut n, mut acc) = (self.root, 0);
        let mut best = None;
        while n != NIL {
            let node = &self.nodes[n as usize];
            let below = acc + node.lazy;
            if node.key >= from {
                if ok(node.val + acc) || holds(node.right, below) {
                    best = Some((n, acc));
                }
                n = node.left;
            } else {
                n = node.right;
            }
            acc = below;
        }
        let (q, acc) = best?;
        let node = &self.nodes[q as usize];
        if ok(node.val + acc) {
            return Some(node.key);
        }
        let (mut n, mut acc) = (node.right, acc + node.lazy);
        loop {
            let node = &self.nodes[n as usize];
            let below = acc + node.lazy;
            if holds(node.left, below) {
                n = node.left;
            } else if ok(node.val + acc) {
                return Some(node.key);
            } else {
                n = node.right;
            }
            acc = below;
        }
    }

    fn min_key(&self, mut n: u32) -> i64 {
        loop {
            let node = &self.nodes[n as usize];
            if node.left == NIL {
                return node.key;
            }
            n = node.left;
        }
    }

    /// The node whose key is `key`.
    fn lookup(&self, key: i64) -> Option<u32> {
        let mut n = self.root;
        while n != NIL {
            let node = &self.nodes[n as usize];
            if key == node.key {
                return Some(n);
            }
            n = if key < node.key {
                node.left
            } else {
                node.right
            };
        }
        None
    }

    /// Counts one more interval boundary at `key`, adding the breakpoint
    /// (with the value just before it) if there is none.
    fn touch(&mut self, key: i64) {
        if let Some(n) = self.lookup(key) {
            self.nodes[n as usize].refs += 1;
            return;
        }
        let v = self.value_at(key);
        let fresh = self.alloc(key, v, 1);
        self.root = self.insert(self.root, fresh);
    }

    /// Puts node `fresh` (its value true: nothing pending above it once the
    /// path down to it is pushed) into subtree `n` as a leaf and rotates it
    /// up to its place by priority. The new subtree.
    fn insert(&mut self, n: u32, fresh: u32) -> u32 {
        if n == NIL {
            return fresh;
        }
        self.push(n);
        if self.nodes[fresh as usize].key < self.nodes[n as usize].key {
            let l = self.insert(self.nodes[n as usize].left, fresh);
            self.nodes[n as usize].left = l;
            if self.nodes[l as usize].prio > self.nodes[n as usize].prio {
                // Rotate right: `l` up. Both have nothing pending.
                self.nodes[n as usize].left = self.nodes[l as usize].right;
                self.nodes[l as usize].right = n;
                self.pull(n);
                self.pull(l);
                return l;
            }
        } else {
            let r = self.insert(self.nodes[n as usize].right, fresh);
            self.nodes[n as usize].right = r;
            if self.nodes[r as usize].prio > self.nodes[n as usize].prio {
                self.nodes[n as usize].right = self.nodes[r as usize].left;
                self.nodes[r as usize].left = n;
                self.pull(n);
                self.pull(r);
                return r;
            }
        }
        self.pull(n);
        n
    }

    /// Takes the node with `key` (which is there) out of subtree `n`. The
    /// new subtree.
    fn remove(&mut self, n: u32, key: i64) -> u32 {
        self.push(n);
        let node = self.nodes[n as usize];
        if key == node.key {
            self.free_nodes.push(n);
            return self.merge(node.left, node.right);
        }
        if key < node.key {
            let l = self.remove(node.left, key);
            self.nodes[n as usize].left = l;
        } else {
            let r = self.remove(node.right, key);
            self.nodes[n as usize].right = r;
        }
        self.pull(n);
        n
    }

    /// Adds `delta` to the values of the keys in `[start, end)` within
    /// subtree `n`, whose keys are in `[lo, hi)`: whole subtrees inside
    /// take it as a pending addition, so only the two paths to `start` and
    /// `end` are walked.
    fn add(&mut self, n: u32, lo: i64, hi: i64, start: i64, end: i64, delta: i64) {
        if n == NIL || hi <= start || end <= lo {
            return;
        }
        if start <= lo && hi <= end {
            self.apply(n, delta);
            return;
        }
        self.push(n);
        let node = self.nodes[n as usize];
        if start <= node.key && node.key < end {
            self.nodes[n as usize].val += delta;
        }
        self.add(node.left, lo, node.key, start, end, delta);
        self.add(node.right, node.key + 1, hi, start, end, delta);
        self.pull(n);
    }

    /// Counts one boundary off at `key`; the breakpoint goes when none is
    /// left (never the one at `now`).
    fn untouch(&mut self, key: i64) {
        let n = self.lookup(key).expect("a counted breakpoint");
        let node = &mut self.nodes[n as usize];
        node.refs = node.refs.saturating_sub(1);
        if node.refs == 0 && key != self.now {
            self.root = self.remove(self.root, key);
        }
    }

    fn alloc(&mut self, key: i64, val: i64, refs: u32) -> u32 {
        // xorshift64*: deterministic priorities.
        self.seed ^= self.seed >> 12;
        self.seed ^= self.seed << 25;
        self.seed ^= self.seed >> 27;
        let prio = (self.seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32;
        let node = Node {
            key,
            val,
            min: val,
            max: val,
            lazy: 0,
            refs,
            prio,
            left: NIL,
            right: NIL,
        };
        match self.free_nodes.pop() {
            Some(n) => {
                self.nodes[n as usize] = node;
                n
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    fn free_subtree(&mut self, n: u32) {
        let mut stack = vec![n];
        while let Some(n) = stack.pop() {
            if n == NIL {
                continue;
            }
            let node = self.nodes[n as usize];
            stack.push(node.left);
            stack.push(node.right);
            self.free_nodes.push(n);
        }
    }

    fn apply(&mut self, n: u32, delta: i64) {
        if n != NIL {
            let node = &mut self.nodes[n as usize];
            node.val += delta;
            node.min += delta;
            node.max += delta;
            node.lazy += delta;
        }
    }

    fn push(&mut self, n: u32) {
        let node = self.nodes[n as usize];
        if node.lazy != 0 {
            self.apply(node.left, node.lazy);
            self.apply(node.right, node.lazy);
            self.nodes[n as usize].lazy = 0;
        }
    }

    fn pull(&mut self, n: u32) {
        let node = self.nodes[n as usize];
        let (mut min, mut max) = (node.val, node.val);
        for c in [node.left, node.right] {
            if c != NIL {
                let child = &self.nodes[c as usize];
                min = min.min(child.min);
                max = max.max(child.max);
            }
        }
        let node = &mut self.nodes[n as usize];
        node.min = min;
        node.max = max;
    }

    /// Splits into keys < `key` and keys >= `key`.
    fn split(&mut self, n: u32, key: i64) -> (u32, u32) {
        if n == NIL {
            return (NIL, NIL);
        }
        self.push(n);
        if self.nodes[n as usize].key < key {
            let (a, b) = self.split(self.nodes[n as usize].right, key);
            self.nodes[n as usize].right = a;
            self.pull(n);
            (n, b)
        } else {
            let (a, b) = self.split(self.nodes[n as usize].left, key);
            self.nodes[n as usize].left = b;
            self.pull(n);
            (a, n)
        }
    }

    /// Joins two trees, every key of `a` below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio >= self.nodes[b as usize].prio {
            self.push(a);
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.pull(a);
            a
        } else {
            self.push(b);
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.pull(b);
            b
        }
    }
}

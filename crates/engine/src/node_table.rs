//! The node table, and which nodes changed since each pass last looked.
//!
//! Every pass reads two things off the nodes: the free CPUs of the
//! schedulable ones (`Engine::free_cpus`) and the scheduler's views
//! (`Engine::refreshed_node_views`). Between two passes only the nodes of
//! the jobs that started or ended change, so both are brought up to date
//! from the nodes changed since, not from every node. A change is any
//! mutable access (`IndexMut`, `iter_mut`): reads go through
//! `Deref` to the slice, so the compiler sees to it that no write is missed.

use crate::Node;
use std::ops::{Deref, Index, IndexMut};

/// The nodes, in configuration order.
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeTable {
    nodes: Vec<Node>,
    /// Nodes changed since `free_cpus` last counted.
    for_free: Changed,
    /// Nodes changed since `take_view_changes`.
    for_views: Changed,
    /// Each node's free CPUs as `free_cpus` last counted them, and their sum.
    free_of: Vec<u32>,
    free: u32,
    /// Each node's `apart` as `free_cpus` last looked, and how many are.
    apart_of: Vec<bool>,
    apart: u32,
}

/// The nodes changed since one reader last looked, each once; `all`: every
/// node (the table is new, or most of it was reached at once).
#[derive(Clone, Debug)]
struct Changed {
    list: Vec<u32>,
    marked: Vec<bool>,
    all: bool,
}

impl Default for Changed {
    fn default() -> Self {
        Changed {
            list: Vec::new(),
            marked: Vec::new(),
            all: true,
        }
    }
}

impl Changed {
    fn mark(&mut self, i: usize) {
        if self.all {
            return;
        }
        if !self.marked[i] {
            self.marked[i] = true;
            self.list.push(i as u32);
        }
    }

    /// The changed nodes (`None`: every one), marks cleared: nothing has
    /// changed since.
    fn take(&mut self, n: usize) -> Option<Vec<u32>> {
        let all = std::mem::replace(&mut self.all, false);
        for &i in &self.list {
            self.marked[i as usize] = false;
        }
        self.marked.resize(n, false);
        let list = std::mem::take(&mut self.list);
        (!all).then_some(list)
    }

    /// Gives back `take`'s list, emptied, for its memory.
    fn give_back(&mut self, mut list: Vec<u32>) {
        if self.list.is_empty() {
            list.clear();
            self.list = list;
        }
    }
}

/// Whether the CPUs of the jobs running on `n` will not be free for
/// others when they end: it takes no new jobs, or an exclusive job holds
/// it whole (`sched::gives_back_apart` of its view).
fn apart(n: &Node) -> bool {
    (!n.takes_jobs() || n.exclusive_in_use) && n.alloc_cpus > 0
}

/// The CPUs of `n` a job could be given now (0 unless it is schedulable).
fn free_cpus_of(n: &Node) -> u32 {
    if n.takes_jobs() {
        n.conf.cpus.saturating_sub(n.alloc_cpus)
    } else {
        0
    }
}

impl NodeTable {
    /// A table of `nodes`, every one of them changed.
    pub(crate) fn new(nodes: Vec<Node>) -> NodeTable {
        NodeTable {
            nodes,
            ..NodeTable::default()
        }
    }

    fn mark(&mut self, i: usize) {
        self.for_free.mark(i);
        self.for_views.mark(i);
    }

    fn mark_all(&mut self) {
        self.for_free.all = true;
        self.for_views.all = true;
    }

    /// Every node, to change.
    pub(crate) fn iter_mut(&mut self) -> std::slice::IterMut<'_, Node> {
        self.mark_all();
        self.nodes.iter_mut()
    }

    /// The free CPUs of the schedulable nodes: the sum over every node of
    /// what `Engine::free_cpus` counts, brought up to date from the nodes
    /// changed since it was last asked.
    pub(crate) fn free_cpus(&mut self) -> u32 {
        let n = self.nodes.len();
        match self.for_free.take(n) {
            None => {
                self.free_of = self.nodes.iter().map(free_cpus_of).collect();
                self.free = self.free_of.iter().sum();
                self.apart_of = self.nodes.iter().map(apart).collect();
                self.apart = self.apart_of.iter().filter(|a| **a).count() as u32;
            }
            Some(list) => {
                for &i in &list {
                    let i = i as usize;
                    let new = free_cpus_of(&self.nodes[i]);
                    self.free = self.free - self.free_of[i] + new;
                    self.free_of[i] = new;
                    let now_apart = apart(&self.nodes[i]);
                    if self.apart_of[i] != now_apart {
                        self.apart_of[i] = now_apart;
                        if now_apart {
                            self.apart += 1;
                        } else {
                            self.apart -= 1;
                        }
                    }
                }
                self.for_free.give_back(list);
            }
        }
        debug_assert_eq!(self.free, self.free_cpus_swept());
        self.free
    }

    /// Whether some node holds running jobs whose CPUs will not be free
    /// for others when they end (`apart`), brought up to date as
    /// `free_cpus` is.
    pub(crate) fn any_apart(&mut self) -> bool {
        self.free_cpus();
        debug_assert_eq!(
            self.apart as usize,
            self.nodes.iter().filter(|n| apart(n)).count()
        );
        self.apart > 0
    }

    /// `free_cpus` from every node, for a reader that may not change the
    /// table.
    pub(crate) fn free_cpus_swept(&self) -> u32 {
        self.nodes.iter().map(free_cpus_of).sum()
    }

    /// The nodes changed since the last call (`None`: every node may
    /// have), in no particular order. Give the list back with
    /// `give_back_view_changes` to keep its memory.
    pub(crate) fn take_view_changes(&mut self) -> Option<Vec<u32>> {
        let n = self.nodes.len();
        self.for_views.take(n)
    }

    /// Gives back `take_view_changes`'s list.
    pub(crate) fn give_back_view_changes(&mut self, list: Vec<u32>) {
        self.for_views.give_back(list);
    }
}

impl Deref for NodeTable {
    type Target = [Node];
    fn deref(&self) -> &[Node] {
        &self.nodes
    }
}

impl<'a> IntoIterator for &'a NodeTable {
    type Item = &'a Node;
    type IntoIter = std::slice::Iter<'a, Node>;
    fn into_iter(self) -> Self::IntoIter {
        self.nodes.iter()
    }
}

impl Index<usize> for NodeTable {
    type Output = Node;
    fn index(&self, i: usize) -> &Node {
        &self.nodes[i]
    }
}

impl IndexMut<usize> for NodeTable {
    fn index_mut(&mut self, i: usize) -> &mut Node {
        self.mark(i);
        &mut self.nodes[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test engine's nodes (node1-4, 2 CPUs each, registered), the
    /// first `n` of them, with 4 CPUs.
    fn table(n: usize) -> NodeTable {
        let e = crate::tests::engine();
        let nodes = e
            .nodes
            .iter()
            .take(n)
            .cloned()
            .map(|mut node| {
                node.conf.cpus = 4;
                node
            })
            .collect();
        NodeTable::new(nodes)
    }

    #[test]
    fn free_cpus_follows_every_kind_of_change() {
        let mut t = table(3);
        assert_eq!(t.free_cpus(), 12);
        t[1].alloc_cpus = 3;
        assert_eq!(t.free_cpus(), 9);
        t[2].registered = false;
        assert_eq!(t.free_cpus(), 5);
        for n in t.iter_mut() {
            n.alloc_cpus = 1;
        }
        assert_eq!(t.free_cpus(), 6);
        assert_eq!(t.free_cpus(), t.free_cpus_swept());
    }

    #[test]
    fn view_changes_are_each_node_once_since_the_last_look() {
        let mut t = table(4);
        assert_eq!(t.take_view_changes(), None, "a new table: every node");
        let none = t.take_view_changes().unwrap();
        assert!(none.is_empty());
        t.give_back_view_changes(none);
        t[2].alloc_cpus = 1;
        t[0].alloc_cpus = 1;
        t[2].alloc_mem = 5;
        let mut changed = t.take_view_changes().unwrap();
        changed.sort_unstable();
        assert_eq!(changed, vec![0, 2]);
        t.give_back_view_changes(changed);
        // The free count is a reader of its own: the views took theirs.
        assert_eq!(t.free_cpus(), 14);
        let _ = t.iter_mut();
        assert_eq!(t.take_view_changes(), None);
    }
}

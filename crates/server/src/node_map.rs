//! The tree's node map: every znode by its path, keyed by the path the node itself holds (see
//! `tree::Node`: path and data share one allocation), so a slot of the table is a single pointer and no znode pays
//! for a second copy of its path as the key.

use hashbrown::hash_table::{Entry, HashTable};
use std::hash::BuildHasher as _;

/// The hasher of the node map and of the tree's other path sets: foldhash (what hashbrown uses by default), seeded
/// at random per process, so paths chosen by a client cannot be made to collide; SipHash was 5 % of a restart with
/// a million nodes.
pub type Hasher = foldhash::fast::RandomState;

/// What the map keys a value by: bytes the value holds itself (a node's path).
pub trait Keyed {
    fn key(&self) -> &[u8];
}

/// Boxed values by the key they hold.
#[derive(Debug, Clone)]
pub struct NodeMap<T> {
    table: HashTable<Box<T>>,
    hasher: Hasher,
}

impl<T> Default for NodeMap<T> {
    fn default() -> Self {
        NodeMap {
            table: HashTable::new(),
            hasher: Hasher::default(),
        }
    }
}

impl<T: Keyed> NodeMap<T> {
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Room for `additional` more values without growing.
    pub fn reserve(&mut self, additional: usize) {
        let hasher = &self.hasher;
        self.table.reserve(additional, |v| hasher.hash_one(v.key()));
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn get(&self, key: &str) -> Option<&T> {
        let key = key.as_bytes();
        self.table.find(self.hash(key), |v| v.key() == key).map(|v| &**v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut T> {
        let key = key.as_bytes();
        let hash = self.hash(key);
        self.table.find_mut(hash, |v| v.key() == key).map(|v| &mut **v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Puts `value` in under its own key; the value it replaces, if any.
    pub fn insert(&mut self, value: Box<T>) -> Option<Box<T>> {
        self.insert_hashed(self.hash(value.key()), value)
    }

    /// [`NodeMap::insert`] with the key's hash known.
    fn insert_hashed(&mut self, hash: u64, value: Box<T>) -> Option<Box<T>> {
        let hasher = &self.hasher;
        match self
            .table
            .entry(hash, |v| v.key() == value.key(), |v| hasher.hash_one(v.key()))
        {
            Entry::Occupied(mut slot) => Some(std::mem::replace(slot.get_mut(), value)),
            Entry::Vacant(slot) => {
                slot.insert(value);
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Box<T>> {
        let key = key.as_bytes();
        let hash = self.hash(key);
        self.table
            .find_entry(hash, |v| v.key() == key)
            .ok()
            .map(|slot| slot.remove().0)
    }

    /// Puts every value in under its own key, in the order of the slots they land in rather than the order given
    /// ([`sort_by_slot`]); the values they replace, if any.
    pub fn insert_all(&mut self, values: Vec<Box<T>>) -> Vec<Box<T>> {
        self.reserve(values.len());
        let mut hashed: Vec<(u64, Box<T>)> = values.into_iter().map(|v| (self.hash(v.key()), v)).collect();
        sort_by_slot(&mut hashed, self.table.capacity());
        hashed
            .into_iter()
            .filter_map(|(hash, value)| self.insert_hashed(hash, value))
            .collect()
    }

    /// Every value, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.table.iter().map(|v| &**v)
    }
}

/// Orders hashed values by the slot a hashbrown table with room for `capacity` values looks at first (`hash &
/// (buckets - 1)`). Inserted in this order, a million values walk the table once; in the order of a snapshot each
/// insert is a cache miss, the largest part of a restart with a million znodes (docs/benchmarks.md). Only the speed
/// depends on it: any order builds the same table.
pub fn sort_by_slot<T>(hashed: &mut [(u64, T)], capacity: usize) {
    // hashbrown fills at most 7/8 of its buckets, a power of two: `capacity` is 7/8 of it (from 8 buckets up).
    let buckets = (capacity / 7 * 8).max(1).next_power_of_two() as u64;
    // Stable: of two values with one key, the later one stays, as with one insert after another.
    hashed.sort_by_key(|(hash, _)| hash & (buckets - 1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Named(String, u32);

    impl Keyed for Named {
        fn key(&self) -> &[u8] {
            self.0.as_bytes()
        }
    }

    fn named(key: &str, n: u32) -> Box<Named> {
        Box::new(Named(key.to_owned(), n))
    }

    #[test]
    fn finds_replaces_and_removes_by_the_values_own_key() {
        let mut map = NodeMap::default();
        map.reserve(10);
        for i in 0..1000 {
            assert!(map.insert(named(&format!("/n{i}"), i)).is_none());
        }
        assert_eq!(map.len(), 1000);
        assert_eq!(map.get("/n7").unwrap().1, 7);
        assert!(map.get("/n1000").is_none() && !map.contains_key("/n"));
        let old = map.insert(named("/n7", 70)).expect("replaced");
        assert_eq!((old.1, map.len()), (7, 1000));
        map.get_mut("/n7").unwrap().1 = 3;
        assert_eq!(map.remove("/n7").unwrap().1, 3);
        assert!(map.get("/n7").is_none() && map.remove("/n7").is_none());
        assert_eq!(map.iter().count(), 999);
    }

    #[test]
    fn inserting_all_at_once_is_inserting_one_by_one() {
        let mut map = NodeMap::default();
        assert!(map.insert(named("/n3", 30)).is_none());
        // 3 is there already, and 5 comes twice: the later value stays, as with `insert`.
        let values = (0..10_000)
            .map(|i| named(&format!("/n{i}"), i))
            .chain([named("/n5", 50)]);
        let mut replaced: Vec<u32> = map.insert_all(values.collect()).iter().map(|v| v.1).collect();
        replaced.sort();
        assert_eq!(replaced, [5, 30]);
        assert_eq!(map.len(), 10_000);
        assert!((0..10_000).all(|i| map.get(&format!("/n{i}")).unwrap().1 == if i == 5 { 50 } else { i }));
        assert_eq!(map.iter().count(), 10_000);
    }

    #[test]
    fn slot_order_is_the_order_of_the_first_slot_looked_at() {
        let mut hashed: Vec<(u64, ())> = [0x13, 0x0f, 0x1f1, 0x2, 0x10].map(|h| (h, ())).to_vec();
        // 14 values fit in 16 buckets: the slot is `hash & 15`.
        sort_by_slot(&mut hashed, 14);
        assert_eq!(
            hashed.iter().map(|h| h.0 & 15).collect::<Vec<_>>(),
            [0, 1, 2, 3, 15]
        );
    }
}

//! Test builds only: a simulated disk for the crash explorer (`crash_tests.rs`).
//!
//! [`SimDisk`] implements the storage's [`Vfs`] in memory and records every operation that changes what a power
//! loss could leave: writes, length changes, file syncs, creations, renames, removals, directory syncs (and the
//! test's own `Ack` markers, in the order the completions ran). [`Model`] replays that trace and builds the disk
//! images a power loss after any prefix of it may leave:
//!
//! * **File data**: what the last `sync_data`/`sync_all` of the file covered is kept. Each write or length change
//!   made after it is independently dropped, kept, or (a write) kept torn: a prefix cut at any byte, or any subset
//!   of its 512-byte sectors; a torn write may also leave the file length covering its whole range, the missing
//!   part reading as zeros. Kept operations apply in the order they were made, so a byte never shows older data
//!   than a kept later write gave it. `sync_data` and `sync_all` are the same here (both keep data and length).
//! * **Names**: a directory's entries are what its last `sync_dir` saw. Each creation, rename and removal made
//!   after it is independently kept or dropped, applied in order, and dropped when what it needs is not there (a
//!   rename of a file whose creation was dropped). A file's own fsync does *not* make its name durable (POSIX; ext4
//!   often does, other file systems do not). A rename is atomic: the new name or the old one, never neither.
//! * Directories the storage creates (`ensure_dir`) are entries of their parents like files: they survive only
//!   if the parent was synced after their creation. The directories of the starting image are durable.
//! * A file that no durable name reaches is gone.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rand::rngs::StdRng;
use rand::Rng;

use crate::error::Result;
use crate::vfs::{Vfs, VfsFile};

/// A disk's content: directory → file name → bytes. Every directory in it exists.
pub(crate) type Image = BTreeMap<PathBuf, BTreeMap<String, Vec<u8>>>;

/// The inode number of a directory's entry for a subdirectory.
const DIR_INO: usize = usize::MAX;

/// One recorded operation. Inode numbers are positions in the image's iteration order, then creation order.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Create {
        dir: PathBuf,
        name: String,
        ino: usize,
    },
    Write {
        ino: usize,
        offset: u64,
        data: Arc<[u8]>,
    },
    SetLen {
        ino: usize,
        len: u64,
    },
    SyncFile {
        ino: usize,
    },
    Rename {
        dir: PathBuf,
        from: String,
        to: String,
        ino: usize,
    },
    Remove {
        dir: PathBuf,
        name: String,
        ino: usize,
    },
    SyncDir {
        dir: PathBuf,
    },
    /// A directory created in `parent`.
    MkDir {
        parent: PathBuf,
        name: String,
    },
    /// Test marker: the completion of this zxid ran (it was acknowledged).
    Ack {
        zxid: i64,
    },
}

struct Live {
    dirs: BTreeMap<PathBuf, BTreeMap<String, usize>>,
    inodes: Vec<Vec<u8>>,
    trace: Vec<Op>,
}

/// The simulated disk: cheap to clone, all clones share one state.
#[derive(Clone)]
pub(crate) struct SimDisk {
    base: Arc<Image>,
    live: Arc<Mutex<Live>>,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{} not found", path.display()))
}

fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let dir = path.parent().ok_or_else(|| not_found(path))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| not_found(path))?;
    Ok((dir.to_path_buf(), name.to_owned()))
}

impl SimDisk {
    /// A disk holding `image`, all of it durable.
    pub(crate) fn new(image: Image) -> Self {
        let mut dirs = BTreeMap::new();
        let mut inodes = Vec::new();
        for (dir, files) in &image {
            let entries: &mut BTreeMap<String, usize> = dirs.entry(dir.clone()).or_default();
            for (name, data) in files {
                entries.insert(name.clone(), inodes.len());
                inodes.push(data.clone());
            }
        }
        SimDisk {
            base: Arc::new(image),
            live: Arc::new(Mutex::new(Live {
                dirs,
                inodes,
                trace: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that the completion of `zxid` ran.
    pub(crate) fn ack(&self, zxid: i64) {
        self.lock().trace.push(Op::Ack { zxid });
    }

    /// The image this disk started from and everything recorded since.
    pub(crate) fn history(&self) -> (Arc<Image>, Vec<Op>) {
        (self.base.clone(), self.lock().trace.clone())
    }

    /// The image a power loss now leaves when nothing but what was synced survives.
    pub(crate) fn durable_image(&self) -> Image {
        let (base, trace) = self.history();
        let mut model = Model::new(&base);
        for op in &trace {
            model.apply(op);
        }
        model.crash(&mut Keep::Durable)
    }

    fn ino(&self, path: &Path) -> io::Result<usize> {
        let (dir, name) = split(path)?;
        let live = self.lock();
        live.dirs
            .get(&dir)
            .and_then(|d| d.get(&name))
            .copied()
            .filter(|&ino| ino != DIR_INO)
            .ok_or_else(|| not_found(path))
    }

    fn file(&self, ino: usize) -> Box<dyn VfsFile> {
        Box::new(SimFile {
            disk: self.clone(),
            ino,
        })
    }

    fn create(&self, path: &Path, exclusive: bool) -> io::Result<Box<dyn VfsFile>> {
        let (dir, name) = split(path)?;
        let mut live = self.lock();
        let live = &mut *live;
        let entries = live.dirs.get_mut(&dir).ok_or_else(|| not_found(&dir))?;
        if let Some(&ino) = entries.get(&name) {
            if exclusive {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, "file exists"));
            }
            live.inodes[ino].clear();
            live.trace.push(Op::SetLen { ino, len: 0 });
            return Ok(self.file(ino));
        }
        let ino = live.inodes.len();
        live.inodes.push(Vec::new());
        entries.insert(name.clone(), ino);
        live.trace.push(Op::Create { dir, name, ino });
        Ok(self.file(ino))
    }
}

impl Vfs for SimDisk {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn VfsFile>> {
        self.create(path, true)
    }

    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn VfsFile>> {
        self.create(path, false)
    }

    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn VfsFile>> {
        Ok(self.file(self.ino(path)?))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let ino = self.ino(path)?;
        Ok(self.lock().inodes[ino].clone())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let live = self.lock();
        let entries = live.dirs.get(dir).ok_or_else(|| not_found(dir))?;
        Ok(entries.keys().cloned().collect())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        assert_eq!(dir, to_dir, "the storage renames within a directory only");
        let mut live = self.lock();
        let live = &mut *live;
        let entries = live.dirs.get_mut(&dir).ok_or_else(|| not_found(&dir))?;
        let ino = entries.remove(&from_name).ok_or_else(|| not_found(from))?;
        entries.insert(to_name.clone(), ino);
        live.trace.push(Op::Rename {
            dir,
            from: from_name,
            to: to_name,
            ino,
        });
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let (dir, name) = split(path)?;
        let mut live = self.lock();
        let live = &mut *live;
        let entries = live.dirs.get_mut(&dir).ok_or_else(|| not_found(&dir))?;
        let ino = entries.remove(&name).ok_or_else(|| not_found(path))?;
        live.trace.push(Op::Remove { dir, name, ino });
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut live = self.lock();
        if !live.dirs.contains_key(dir) {
            return Err(not_found(dir));
        }
        live.trace.push(Op::SyncDir {
            dir: dir.to_path_buf(),
        });
        Ok(())
    }

    fn ensure_dir(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let mut live = self.lock();
        let mut created: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|p| !live.dirs.contains_key(*p))
            .map(Path::to_path_buf)
            .collect();
        created.reverse();
        for new in &created {
            let (parent, name) = split(new).expect("an absolute path");
            let entries = live
                .dirs
                .get_mut(&parent)
                .expect("the image holds the root of every directory");
            entries.insert(name.clone(), DIR_INO);
            live.dirs.insert(new.clone(), BTreeMap::new());
            live.trace.push(Op::MkDir { parent, name });
        }
        Ok(created)
    }

    fn lock_dir(&self, _dir: &Path) -> Result<Box<dyn Send + Sync>> {
        Ok(Box::new(()))
    }

    fn free_space(&self, _dir: &Path) -> io::Result<(u64, u64)> {
        Ok((1 << 40, 4096))
    }
}

struct SimFile {
    disk: SimDisk,
    ino: usize,
}

impl VfsFile for SimFile {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut live = self.disk.lock();
        write_into(&mut live.inodes[self.ino], offset, buf);
        live.trace.push(Op::Write {
            ino: self.ino,
            offset,
            data: buf.into(),
        });
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut live = self.disk.lock();
        live.inodes[self.ino].resize(len as usize, 0);
        live.trace.push(Op::SetLen { ino: self.ino, len });
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.disk.lock().inodes[self.ino].len() as u64)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.disk.lock().trace.push(Op::SyncFile { ino: self.ino });
        Ok(())
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.sync_data()
    }
}

fn write_into(data: &mut Vec<u8>, offset: u64, buf: &[u8]) {
    let offset = offset as usize;
    if data.len() < offset + buf.len() {
        data.resize(offset + buf.len(), 0);
    }
    data[offset..offset + buf.len()].copy_from_slice(buf);
}

/// What survives of the operations not yet synced.
pub(crate) enum Keep<'a> {
    /// Nothing.
    Durable,
    /// Everything (as if the process alone had died).
    All,
    /// A random choice per operation (see the module docs).
    Random(&'a mut StdRng),
}

/// The durable state after a prefix of the trace, and what is not yet durable.
#[derive(Clone)]
pub(crate) struct Model {
    /// The directories of the starting image (always there).
    roots: BTreeSet<PathBuf>,
    durable_dirs: BTreeMap<PathBuf, BTreeMap<String, usize>>,
    pending_dirs: BTreeMap<PathBuf, Vec<Op>>,
    durable_data: Vec<Vec<u8>>,
    pending_data: Vec<Vec<Op>>,
    /// The zxids acknowledged so far, in order.
    pub(crate) acked: Vec<i64>,
}

impl Model {
    /// The state of a disk holding `image`, all of it durable.
    pub(crate) fn new(image: &Image) -> Self {
        let mut durable_dirs = BTreeMap::new();
        let mut durable_data = Vec::new();
        for (dir, files) in image {
            let entries: &mut BTreeMap<String, usize> = durable_dirs.entry(dir.clone()).or_default();
            for (name, data) in files {
                entries.insert(name.clone(), durable_data.len());
                durable_data.push(data.clone());
            }
        }
        let pending_data = vec![Vec::new(); durable_data.len()];
        Model {
            roots: image.keys().cloned().collect(),
            durable_dirs,
            pending_dirs: BTreeMap::new(),
            durable_data,
            pending_data,
            acked: Vec::new(),
        }
    }

    /// Whether anything is not durable yet (else every crash leaves the same image).
    pub(crate) fn has_pending(&self) -> bool {
        self.pending_dirs.values().any(|ops| !ops.is_empty())
            || self.pending_data.iter().any(|ops| !ops.is_empty())
    }

    /// Advances by one recorded operation.
    pub(crate) fn apply(&mut self, op: &Op) {
        match op {
            Op::Create { dir, ino, .. } => {
                assert_eq!(
                    *ino,
                    self.durable_data.len(),
                    "inodes are numbered in creation order"
                );
                self.durable_data.push(Vec::new());
                self.pending_data.push(Vec::new());
                self.pending_dirs.entry(dir.clone()).or_default().push(op.clone());
            }
            Op::Rename { dir, .. } | Op::Remove { dir, .. } | Op::MkDir { parent: dir, .. } => {
                self.pending_dirs.entry(dir.clone()).or_default().push(op.clone());
            }
            Op::Write { ino, .. } | Op::SetLen { ino, .. } => self.pending_data[*ino].push(op.clone()),
            Op::SyncFile { ino } => {
                for op in std::mem::take(&mut self.pending_data[*ino]) {
                    apply_data(&mut self.durable_data[*ino], &op);
                }
            }
            Op::SyncDir { dir } => {
                let entries = self.durable_dirs.entry(dir.clone()).or_default();
                for op in self.pending_dirs.remove(dir).unwrap_or_default() {
                    apply_name(entries, &op);
                }
            }
            Op::Ack { zxid } => self.acked.push(*zxid),
        }
    }

    /// The image a power loss leaves now, keeping of the unsynced operations what `keep` says.
    pub(crate) fn crash(&self, keep: &mut Keep<'_>) -> Image {
        let mut image = Image::new();
        // Parents sort before their children.
        let dirs: BTreeSet<&PathBuf> = self.durable_dirs.keys().chain(self.pending_dirs.keys()).collect();
        let mut subdirs = BTreeSet::new();
        for dir in dirs {
            let mut entries = self.durable_dirs.get(dir).cloned().unwrap_or_default();
            for op in self.pending_dirs.get(dir).into_iter().flatten() {
                if keeps(keep) {
                    apply_name(&mut entries, op);
                }
            }
            if !self.roots.contains(dir) && !subdirs.contains(dir) {
                continue; // its entry in its parent did not survive
            }
            let files = image.entry(dir.clone()).or_default();
            for (name, ino) in entries {
                if ino == DIR_INO {
                    subdirs.insert(dir.join(name));
                } else {
                    files.insert(name, self.crash_data(ino, keep));
                }
            }
        }
        image
    }

    fn crash_data(&self, ino: usize, keep: &mut Keep<'_>) -> Vec<u8> {
        let mut data = self.durable_data[ino].clone();
        for op in &self.pending_data[ino] {
            let Keep::Random(rng) = keep else {
                if matches!(keep, Keep::All) {
                    apply_data(&mut data, op);
                }
                continue;
            };
            match op {
                Op::Write {
                    offset, data: buf, ..
                } => match rng.gen_range(0..4) {
                    0 => {}
                    1 => apply_data(&mut data, op),
                    torn => {
                        let full_len = *offset as usize + buf.len();
                        if torn == 2 {
                            let cut = rng.gen_range(0..=buf.len());
                            write_into(&mut data, *offset, &buf[..cut]);
                        } else {
                            // Sectors of the file, each kept or not.
                            let mut at = *offset as usize;
                            while at < full_len {
                                let end = ((at / 512 + 1) * 512).min(full_len);
                                if rng.gen_bool(0.5) {
                                    let from = at - *offset as usize;
                                    write_into(&mut data, at as u64, &buf[from..end - *offset as usize]);
                                }
                                at = end;
                            }
                        }
                        if rng.gen_bool(0.5) && data.len() < full_len {
                            data.resize(full_len, 0);
                        }
                    }
                },
                _ => {
                    if rng.gen_bool(0.5) {
                        apply_data(&mut data, op);
                    }
                }
            }
        }
        data
    }
}

fn keeps(keep: &mut Keep<'_>) -> bool {
    match keep {
        Keep::Durable => false,
        Keep::All => true,
        Keep::Random(rng) => rng.gen_bool(0.5),
    }
}

fn apply_data(data: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write {
            offset, data: buf, ..
        } => write_into(data, *offset, buf),
        Op::SetLen { len, .. } => data.resize(*len as usize, 0),
        _ => unreachable!("not a data operation: {op:?}"),
    }
}

/// Applies a directory operation if what it needs is there.
fn apply_name(entries: &mut BTreeMap<String, usize>, op: &Op) {
    match op {
        Op::Create { name, ino, .. } => {
            entries.insert(name.clone(), *ino);
        }
        Op::MkDir { name, .. } => {
            entries.insert(name.clone(), DIR_INO);
        }
        Op::Rename { from, to, ino, .. } => {
            if entries.get(from) == Some(ino) {
                entries.remove(from);
                entries.insert(to.clone(), *ino);
            }
        }
        Op::Remove { name, ino, .. } => {
            if entries.get(name) == Some(ino) {
                entries.remove(name);
            }
        }
        _ => unreachable!("not a directory operation: {op:?}"),
    }
}

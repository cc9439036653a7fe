//! The crash explorer: power loss at every step of a workload that rolls the log and takes snapshots, on the
//! simulated disk of `sim_disk.rs` (its docs give the crash model). After each crash state, recovery
//! ([`Storage::open`]) must succeed and give back every acknowledged txn (its completion ran before the crash), in
//! order, with nothing invented; then the recovered storage must take a new txn that survives a second power loss.
//!
//! Negative controls: the same exploration with one sync removed (`Disk::skip`, test builds only) must find the loss.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::recovery::Recovered;
use crate::sim_disk::{Image, Keep, Model, Op, SimDisk};
use crate::storage::Storage;
use crate::vfs::{Disk, SyncPoint};
use crate::StorageOptions;

const DIR: &str = "/sim/data";
const LOG_DIR: &str = "/sim/log";
/// Txns the workload appends.
const TXNS: i64 = 300;
/// New random crash states drawn per crash point where something is not durable yet, besides "only the synced"
/// and "everything".
const RANDOM_PER_POINT: usize = 12;
const SEED: u64 = 21;

/// The payload of `zxid`: its own bytes, of a length that varies so batches end anywhere in a sector.
fn payload(zxid: i64) -> Vec<u8> {
    let mut p = format!("txn {zxid};").into_bytes();
    p.resize(8 + (zxid as usize * 37) % 120, zxid as u8);
    p
}

/// The snapshot of the state after every txn up to `zxid`.
fn snapshot_blob(zxid: i64) -> Vec<u8> {
    let mut crc = 0;
    for z in 1..=zxid {
        crc = crc32c::crc32c_append(crc, &payload(z));
    }
    format!("state through {zxid}: {crc:08x}").into_bytes()
}

fn options(separate_log_dir: bool) -> StorageOptions {
    let mut options = StorageOptions::new(DIR);
    if separate_log_dir {
        options.log_dir = Some(PathBuf::from(LOG_DIR));
    }
    options.log_roll_bytes = 1024;
    options.preallocate_bytes = 512;
    options.max_batch = 4;
    options.snapshots_to_keep = 2;
    options
}

fn empty_image(options: &StorageOptions) -> Image {
    let mut image = Image::new();
    image.entry(options.dir.clone()).or_default();
    image.entry(options.log_dir().to_path_buf()).or_default();
    image
}

fn disk(sim: &SimDisk, skip: Option<SyncPoint>) -> Disk {
    let mut disk = Disk::new(Arc::new(sim.clone()), true);
    disk.skip = skip;
    disk
}

/// Appends `zxids` without waiting, each completion marking its ack on the disk's trace; returns the receiver of
/// the completions.
fn append_all(storage: &Storage, sim: &SimDisk, zxids: std::ops::RangeInclusive<i64>) -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    for zxid in zxids {
        let (sim, tx) = (sim.clone(), tx.clone());
        storage.append(
            zxid,
            payload(zxid),
            Box::new(move |result| {
                result.expect("append on the simulated disk");
                sim.ack(zxid);
                let _ = tx.send(());
            }),
        );
    }
    rx
}

/// Runs the workload on a fresh simulated disk: bursts of appends (so batches hold several records), a roll every
/// ~1 KiB, a snapshot of the last acknowledged txn every 25 txns taken while a burst is in flight.
fn workload(options: &StorageOptions, skip: Option<SyncPoint>) -> SimDisk {
    workload_on(empty_image(options), TXNS, options, skip)
}

/// [`workload`] from `image`, appending `txns` txns.
fn workload_on(image: Image, txns: i64, options: &StorageOptions, skip: Option<SyncPoint>) -> SimDisk {
    let sim = SimDisk::new(image);
    let (storage, recovered) =
        Storage::open_on(options.clone(), disk(&sim, skip)).expect("open the empty disk");
    assert_eq!(recovered.last_zxid, 0);
    let mut next = 1;
    let mut acked = 0;
    while next <= txns {
        let burst = 1 + (next % 6);
        let last = (next + burst - 1).min(txns);
        let done = append_all(&storage, &sim, next..=last);
        if next / 25 != last / 25 && acked > 0 {
            storage
                .save_snapshot(acked, &snapshot_blob(acked))
                .expect("snapshot");
        }
        for _ in next..=last {
            done.recv().expect("completion");
        }
        acked = last;
        next = last + 1;
    }
    storage.close().expect("close");
    sim
}

/// What one crash state gave.
enum Verdict {
    Ok,
    /// Acknowledged txns missing from the recovered state.
    Lost(usize),
    /// Recovery failed, or gave back something that was never written or out of order.
    Broken(String),
}

/// Checks a recovery against the acknowledged zxids; `Ok` gives the zxids the recovered state holds.
fn check(recovered: &Recovered, acked: &[i64]) -> Result<(HashSet<i64>, usize), String> {
    let mut present = HashSet::new();
    let mut last = 0;
    if let Some((zxid, blob)) = &recovered.snapshot {
        if *blob != snapshot_blob(*zxid) {
            return Err(format!("snapshot {zxid} holds a state that was never saved"));
        }
        present.extend(1..=*zxid);
        last = *zxid;
    }
    for (zxid, data) in &recovered.txns {
        if *zxid <= last {
            return Err(format!("txn {zxid} after {last}: out of order"));
        }
        if *data != payload(*zxid) {
            return Err(format!("txn {zxid} has a payload that was never appended"));
        }
        present.insert(*zxid);
        last = *zxid;
    }
    if recovered.last_zxid != last {
        return Err(format!(
            "last_zxid {} but the state ends at {last}",
            recovered.last_zxid
        ));
    }
    let lost = acked.iter().filter(|z| !present.contains(z)).count();
    Ok((present, lost))
}

/// Recovers `image` and checks it; if nothing acknowledged was lost, appends one txn, loses power again (keeping
/// only what was synced) and checks that the new txn and everything recovered before survived.
fn verify(options: &StorageOptions, image: Image, acked: &[i64]) -> Verdict {
    let sim = SimDisk::new(image);
    let (storage, recovered) = match Storage::open_on(options.clone(), disk(&sim, None)) {
        Ok(opened) => opened,
        Err(e) => return Verdict::Broken(format!("recovery failed: {e}")),
    };
    let (present, lost) = match check(&recovered, acked) {
        Ok(checked) => checked,
        Err(e) => return Verdict::Broken(e),
    };
    if lost > 0 {
        return Verdict::Lost(lost);
    }
    let next = recovered.last_zxid + 1;
    if let Err(e) = storage.append_sync(next, payload(next)) {
        return Verdict::Broken(format!("append after recovery failed: {e}"));
    }
    if let Err(e) = storage.close() {
        return Verdict::Broken(format!("close after recovery failed: {e}"));
    }
    let again = SimDisk::new(sim.durable_image());
    let (storage, recovered) = match Storage::open_on(options.clone(), disk(&again, None)) {
        Ok(opened) => opened,
        Err(e) => return Verdict::Broken(format!("second recovery failed: {e}")),
    };
    drop(storage);
    let mut kept: Vec<i64> = present.into_iter().collect();
    kept.sort_unstable();
    kept.push(next);
    match check(&recovered, &kept) {
        Ok((_, 0)) => {}
        Ok((_, n)) => {
            return Verdict::Broken(format!("{n} txns lost by the second power loss (after recovery)"))
        }
        Err(e) => return Verdict::Broken(format!("after the second power loss: {e}")),
    }
    Verdict::Ok
}

/// An operation in a few words (a write's bytes left out).
fn brief(op: &Op) -> String {
    match op {
        Op::Write { ino, offset, data } => {
            format!("write of {} bytes at {offset} to inode {ino}", data.len())
        }
        other => format!("{other:?}"),
    }
}

/// The explorer's tally.
#[derive(Debug, Default)]
struct Report {
    explored: usize,
    lost: usize,
    states_losing: usize,
    broken: Vec<String>,
}

fn image_hash(image: &Image, acked: usize) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    image.hash(&mut h);
    acked.hash(&mut h);
    h.finish()
}

/// Replays the workload's trace and, after every operation, recovers the crash states drawn there: only what was
/// synced, everything, and `RANDOM_PER_POINT` random choices (fixed seed). Identical states are checked once.
/// A negative control stops at the first state that loses an acknowledged txn.
fn explore(options: &StorageOptions, sim: &SimDisk, stop_at_loss: bool) -> Report {
    let (base, trace) = sim.history();
    let mut model = Model::new(&base);
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut seen = HashSet::new();
    let mut report = Report::default();
    for (i, op) in trace.iter().enumerate() {
        if stop_at_loss && report.lost > 0 {
            break;
        }
        model.apply(op);
        let mut images = vec![model.crash(&mut Keep::Durable)];
        if model.has_pending() {
            images.push(model.crash(&mut Keep::All));
            // Draw until RANDOM_PER_POINT new states (or give up: a short pending write has few).
            let mut fresh = 0;
            for _ in 0..3 * RANDOM_PER_POINT {
                let image = model.crash(&mut Keep::Random(&mut rng));
                if fresh == RANDOM_PER_POINT {
                    break;
                }
                if !seen.contains(&image_hash(&image, model.acked.len())) {
                    fresh += 1;
                    images.push(image);
                }
            }
        }
        for image in images {
            if !seen.insert(image_hash(&image, model.acked.len())) {
                continue;
            }
            report.explored += 1;
            match verify(options, image, &model.acked) {
                Verdict::Ok => {}
                Verdict::Lost(n) => {
                    report.lost += n;
                    report.states_losing += 1;
                }
                Verdict::Broken(why) => report
                    .broken
                    .push(format!("after op #{i} ({}): {why}", brief(op))),
            }
        }
    }
    println!(
        "crash states: {} explored, {} acknowledged txns lost ({} states losing some; {} broken; {} ops traced)",
        report.explored,
        report.lost,
        report.states_losing,
        report.broken.len(),
        trace.len()
    );
    if let Some(first) = report.broken.first() {
        println!("first broken state: {first}");
    }
    report
}

fn assert_sound(report: &Report) {
    assert!(
        report.explored >= 1000,
        "only {} crash states explored",
        report.explored
    );
    assert_eq!(report.lost, 0, "acknowledged txns lost");
    assert!(
        report.broken.is_empty(),
        "{} broken states, first: {}",
        report.broken.len(),
        report.broken[0]
    );
}

#[test]
fn power_loss_anywhere_keeps_every_acknowledged_txn() {
    let options = options(false);
    let report = explore(&options, &workload(&options, None), false);
    assert_sound(&report);
}

#[test]
fn power_loss_anywhere_keeps_every_acknowledged_txn_with_a_separate_log_dir() {
    let options = options(true);
    let report = explore(&options, &workload(&options, None), false);
    assert_sound(&report);
}

/// The storage creates its directories at open (here two levels): their entries must be durable (their parents
/// synced) before a txn in them is acknowledged. Found by this explorer: `Storage::open` did not sync them.
#[test]
fn power_loss_keeps_the_directories_the_storage_created() {
    let mut options = options(true);
    options.dir = PathBuf::from("/sim/new/data");
    options.log_dir = Some(PathBuf::from("/sim/new/log"));
    let image = Image::from([(PathBuf::from("/sim"), Default::default())]);
    let report = explore(&options, &workload_on(image.clone(), 40, &options, None), false);
    assert!(report.explored >= 100, "{report:?}");
    assert_eq!(report.lost, 0, "{report:?}");
    assert!(report.broken.is_empty(), "{report:?}");
    // Negative control: without those syncs the explorer finds the loss.
    let sim = workload_on(image, 40, &options, Some(SyncPoint::NewDirParent));
    let report = explore(&options, &sim, true);
    assert!(report.lost > 0, "{report:?}");
}

/// Negative control (a): without the fdatasync of a batch before its completions run, acknowledged txns are lost.
#[test]
fn explorer_finds_a_missing_log_fdatasync() {
    let options = options(false);
    let report = explore(&options, &workload(&options, Some(SyncPoint::LogData)), true);
    assert!(report.lost > 0, "{report:?}");
}

/// Negative control (b): without the directory fsync after a log roll, a new log file's name can vanish.
#[test]
fn explorer_finds_a_missing_directory_fsync_after_a_roll() {
    let options = options(false);
    let report = explore(&options, &workload(&options, Some(SyncPoint::LogCreateDir)), true);
    assert!(report.lost > 0, "{report:?}");
}

/// A workload with one trace whatever the thread timing: `txns` synchronous appends (one batch each, so the log
/// rolls at the same places every run), the first snapshot after `snapshot_at`, then the rest.
fn sequential_workload(options: &StorageOptions, skip: Option<SyncPoint>) -> SimDisk {
    let (txns, snapshot_at) = (80, 60);
    let sim = SimDisk::new(empty_image(options));
    let (storage, _) = Storage::open_on(options.clone(), disk(&sim, skip)).expect("open the empty disk");
    for zxid in 1..=txns {
        storage.append_sync(zxid, payload(zxid)).expect("append");
        sim.ack(zxid);
        if zxid == snapshot_at {
            storage
                .save_snapshot(zxid, &snapshot_blob(zxid))
                .expect("snapshot");
        }
    }
    storage.close().expect("close");
    sim
}

/// Negative control (b): without the directory fsync after a snapshot's rename, the snapshot can vanish while the
/// log files it covered are already gone. On the sequential workload: with the threaded one, whether the first
/// snapshot covers a whole log file depends on how the writer thread happened to batch (a CI run found none).
#[test]
fn explorer_finds_a_missing_directory_fsync_after_a_snapshot() {
    for separate in [false, true] {
        let options = options(separate);
        // The same workload with every sync loses nothing: the loss below is the missing sync's.
        let sound = explore(&options, &sequential_workload(&options, None), false);
        assert!(sound.lost == 0 && sound.broken.is_empty(), "{sound:?}");
        let report = explore(
            &options,
            &sequential_workload(&options, Some(SyncPoint::SnapshotDir)),
            true,
        );
        assert!(report.lost > 0, "separate log dir: {separate}: {report:?}");
    }
}

/// The model itself: a sync keeps, its absence loses (a checker of the checker).
#[test]
fn the_model_keeps_only_what_was_synced() {
    let dir = Path::new(DIR);
    let mut image = Image::new();
    image.entry(dir.to_path_buf()).or_default();
    let sim = SimDisk::new(image);
    let fs: &dyn crate::vfs::Vfs = &sim;
    let mut f = fs.create_new(&dir.join("a")).unwrap();
    f.write_at(b"hello", 0).unwrap();
    f.sync_all().unwrap();
    // Synced data, unsynced name: gone.
    assert!(sim.durable_image()[dir].is_empty());
    fs.sync_dir(dir).unwrap();
    assert_eq!(sim.durable_image()[dir]["a"], b"hello");
    f.write_at(b"HELLO world", 0).unwrap();
    fs.rename(&dir.join("a"), &dir.join("b")).unwrap();
    // Neither the write nor the rename is durable.
    assert_eq!(sim.durable_image()[dir].keys().collect::<Vec<_>>(), ["a"]);
    assert_eq!(sim.durable_image()[dir]["a"], b"hello");
    // Random crashes: the file is under exactly one name; its bytes are old or new ones, byte by byte.
    let (base, trace) = sim.history();
    let mut model = Model::new(&base);
    trace.iter().for_each(|op| model.apply(op));
    let mut rng = StdRng::seed_from_u64(1);
    let mut shapes = HashSet::new();
    for _ in 0..200 {
        let image = model.crash(&mut Keep::Random(&mut rng));
        let files = &image[dir];
        assert_eq!(files.len(), 1);
        let data = files.values().next().unwrap();
        assert!((5..=11).contains(&data.len()), "{data:?}");
        for (i, b) in data.iter().enumerate() {
            assert!(
                b"hello".get(i) == Some(b) || b"HELLO world"[i] == *b || *b == 0,
                "{data:?}"
            );
        }
        shapes.insert((files.keys().next().unwrap().clone(), data.clone()));
    }
    assert!(shapes.len() > 4, "the random crashes hardly vary: {shapes:?}");
}

//! Integration tests of `zklock-storage` on the real filesystem (temporary directories).
//!
//! Byte-level tests build or damage log files by hand from the layout documented in the
//! crate docs, so they double as a check that the documentation matches the code.
//!
//! By topic: `appends`, `damage` (damaged logs at open), `snapshots`, `directories` (directories and options at
//! open), `random_damage` (proptest); `support` holds what they share. Most tests run on two filesystems
//! (`on_both_filesystems!`).

use std::path::PathBuf;

mod appends;
mod damage;
mod directories;
mod random_damage;
mod snapshots;
mod support;

/// Runs each named test body once on the disk-backed temp directory and once on tmpfs
/// (`/dev/shm`), whose fsync and rename behave differently from a journaling filesystem.
macro_rules! on_both_filesystems {
    ($($topic:ident::$name:ident),* $(,)?) => {
        mod disk {
            $( #[test] fn $name() { super::$topic::$name(&std::env::temp_dir()) } )*
        }
        mod tmpfs {
            $( #[test] fn $name() { super::$topic::$name(&super::tmpfs_root()) } )*
        }
    };
}

/// `/dev/shm` where it exists (Linux); elsewhere the normal temp directory.
fn tmpfs_root() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

on_both_filesystems!(
    directories::open_refuses_a_log_dir_without_room_for_one_preallocation_step,
    snapshots::failed_snapshot_leaves_no_temporary_file,
    damage::header_only_newest_log_file_is_not_reused,
    appends::failed_write_poisons_the_log,
    appends::dropping_the_last_handle_inside_a_callback_does_not_deadlock,
    appends::append_and_reopen_round_trip,
    appends::group_commit_with_many_concurrent_writers,
    appends::callbacks_run_in_append_order,
    appends::non_increasing_zxid_fails_only_that_record,
    appends::append_after_close_reports_closed,
    damage::torn_tail_at_every_offset_opens_with_the_prefix,
    damage::zero_filled_tail_is_a_clean_end,
    damage::bit_flip_in_a_middle_record_is_reported_with_file_and_offset,
    damage::damage_in_an_earlier_log_file_is_corruption_even_at_its_end,
    damage::rolled_files_are_named_by_their_first_zxid,
    damage::torn_final_batch_with_out_of_order_writeback_is_a_clean_end,
    damage::damage_followed_by_a_later_batch_is_corruption,
    damage::out_of_order_zxids_on_disk_are_rejected,
    damage::torn_header_of_the_newest_log_file_is_removed,
    snapshots::snapshot_plus_later_txns_are_recovered,
    snapshots::snapshot_ahead_of_the_log_sets_last_zxid,
    snapshots::snapshot_removes_files_no_longer_needed,
    snapshots::bad_newest_snapshot_falls_back_to_an_older_one,
    directories::separate_log_dir_is_used,
    snapshots::snapshots_do_not_block_appends,
    directories::invalid_options_are_rejected,
);

/* qcow2w.h - a sans-IO qcow2 writer, reader and checker
 * version 0.1.0 - single-header C99 library, part of alk
 *
 * Creates, opens, reads, writes, grows and checks qcow2 images (version 3,
 * and version 2) so that qemu-img cannot tell them from its own. The planner
 * does no I/O: every operation is turned into a bounded batch of host I/O
 * ops (read, write, flush, backing read) in caller memory; the caller
 * executes the batch and resumes. A blocking POSIX executor is included.
 *
 * QUICK START
 *
 *   #define QCOW2W_IMPLEMENTATION        // in exactly one .c file
 *   #include "qcow2w.h"
 *   #include <stdio.h>
 *   #include <string.h>
 *   #include <sys/stat.h>
 *
 *   static unsigned char mem[8u << 20];  // caches + scratch (see MEMORY)
 *   static q2w_op ops[64];
 *
 *   // Writes len bytes at virtual offset off into the image open on fd.
 *   int write_block(int fd, uint64_t off, const void *buf, size_t len) {
 *       q2w_image img;
 *       q2w_config cfg;
 *       struct stat st;
 *       if (fstat(fd, &st) != 0) return -1;
 *       memset(&cfg, 0, sizeof cfg);     // zero: the defaults
 *       cfg.mem = mem; cfg.mem_len = sizeof mem;
 *       cfg.ops = ops; cfg.ops_cap = 64;
 *       cfg.file_size = (uint64_t)st.st_size; cfg.writable = 1;
 *       int rc = q2w_posix_run(&img, fd, NULL, q2w_open(&img, &cfg));
 *       if (rc == Q2W_OK)
 *           rc = q2w_posix_run(&img, fd, NULL, q2w_write(&img, off, buf, len));
 *       if (rc == Q2W_OK) rc = q2w_posix_run(&img, fd, NULL, q2w_close(&img));
 *       if (rc < 0) fprintf(stderr, "%s at %llu\n", q2w_strerror(rc),
 *                           (unsigned long long)q2w_error(&img)->offset);
 *       return rc;
 *   }
 *
 *   // Without the POSIX executor the loop is yours: run each batch in order.
 *   static int execute(int fd, const q2w_op *op, size_t n) {
 *       static const unsigned char zeros[4096] = {0};
 *       size_t i;
 *       for (i = 0; i < n; i++) {
 *           const q2w_op *o = &op[i];
 *           size_t d = 0;
 *           ssize_t k;
 *           switch (o->kind) {
 *           case Q2W_OP_READ:                 // past the end of the file: zeros
 *               k = pread(fd, o->dst, o->len, (off_t)o->off);
 *               if (k < 0) return -1;
 *               memset(o->dst + k, 0, o->len - (size_t)k);
 *               break;
 *           case Q2W_OP_WRITE:                // src NULL: that many zeros
 *               while (d < o->len) {
 *                   size_t m = o->len - d;
 *                   if (!o->src && m > sizeof zeros) m = sizeof zeros;
 *                   k = pwrite(fd, o->src ? o->src + d : zeros, m, (off_t)(o->off + d));
 *                   if (k <= 0) return -1;
 *                   d += (size_t)k;
 *               }
 *               break;
 *           case Q2W_OP_FLUSH:
 *               if (fdatasync(fd) != 0) return -1;
 *               break;
 *           default:                          // BACKING_READ: no backing file here
 *               return -1;
 *           }
 *       }
 *       return 0;
 *   }
 *   int write_own_io(q2w_image *img, int fd, uint64_t off, const void *buf, size_t len) {
 *       int rc = q2w_write(img, off, buf, len);
 *       while (rc == Q2W_PENDING) {
 *           size_t n;
 *           const q2w_op *op = q2w_batch(img, &n);
 *           rc = q2w_resume(img, execute(fd, op, n));
 *       }
 *       return rc;
 *   }
 *
 * CONFIGURATION (define before including the implementation)
 *
 *   QCOW2W_IMPLEMENTATION  emit the implementation here (ALK_IMPLEMENTATION
 *                          turns on every alk header)
 *   QCOW2W_STATIC          make every function static
 *   QCOW2W_ASSERT(c)       internal-invariant check, default assert(c); never
 *                          fires on a malformed image, only on a library bug
 *                          or API misuse
 *   Q2W_NO_STDIO           leave out the POSIX executor (pread/pwrite/
 *                          fdatasync) and the file-descriptor I/O helpers.
 *                          Without it the implementation needs POSIX.1-2008:
 *                          it asks for it itself when qcow2w.h is the first
 *                          include of the file; otherwise define
 *                          _POSIX_C_SOURCE=200809L before any #include (a
 *                          strict -std=c99 glibc build stops with #error;
 *                          gnu99/gnu11, the compilers' default, needs
 *                          nothing). With all four alk headers under
 *                          ALK_IMPLEMENTATION, include qcow2w.h first or
 *                          define the macro: the compile matrix checks
 *                          each of these orders.
 *
 * API
 *
 *   Create (no I/O): q2w_create(opts, buf, cap, &len, &err) writes the bytes
 *     of a fresh image (header, refcount table and blocks, zeroed L1) into
 *     buf; q2w_create(opts, NULL, 0, &len, &err) only sizes it.
 *     q2w_measure(opts, data_bytes, &required, &fully, &err): qemu-img
 *     measure's two figures for such an image holding data_bytes of
 *     clusters with data.
 *   Open and operate (each returns Q2W_OK, Q2W_PENDING or an error):
 *     q2w_open(img, cfg)                   header and extensions validated
 *     q2w_read(img, off, dst, len)         zero flags and backing resolved
 *     q2w_write(img, off, src, len)        any offset and length
 *     q2w_write_zeroes(img, off, len)      v3: zero flag on whole clusters
 *     q2w_discard(img, off, len)           as qemu: whole clusters (and the
 *                                          partial last one at the end of
 *                                          the disk) read as zeros on v3,
 *                                          unallocated on v2; a v2 image
 *                                          with a backing file: no change
 *     q2w_flush(img)                       everything before it is durable
 *     q2w_resize(img, new_size)            grow (L1 growth when needed)
 *     q2w_amend_compat(img, version)       2 or 3, as qemu-img amend -o
 *                                          compat=0.10|1.1 (see below)
 *     q2w_close(img)                       flush and apply deferred frees
 *   Internal snapshots (each also an operation driven the same way):
 *     q2w_snapshot_create(img, name, date_sec, date_nsec, vm_clock_ns)
 *                                          the time is the caller's
 *     q2w_snapshot_delete(img, name)       Q2W_ERR_NOT_FOUND if absent
 *     q2w_snapshot_apply(img, name)        revert: the disk becomes the
 *                                          snapshot's view and size
 *                                          (qemu-img snapshot -a); the
 *                                          snapshot stays
 *     q2w_snapshot_get(img, index, &sn)    list: index 0 .. nb_snapshots-1
 *     q2w_snapshot_find(img, name, &sn)    sn.id and sn.name hold the
 *                                          entry's id_len and name_len
 *                                          bytes then a NUL
 *     q2w_read_snapshot(img, &sn, off, dst, len)   a snapshot's view
 *   Map (what an export or a copy needs to skip holes and read in place):
 *     q2w_map(img, off, len, &ext) describes the longest run of bytes from
 *     off (within [off, off+len), which must be inside the disk) that a
 *     read serves one way: Q2W_EXTENT_DATA (ext.host: where off's byte is
 *     in the image file; the run is contiguous there), Q2W_EXTENT_ZERO
 *     (zero flag, or unallocated with no backing file under it; a zero
 *     flag on a preallocated cluster gives that cluster in ext.host,
 *     contiguous as for data), Q2W_EXTENT_BACKING (unallocated: the
 *     backing file's bytes) or Q2W_EXTENT_COMPRESSED (read it with
 *     q2w_read); ext.allocated is 1 when the image itself holds the run
 *     (a cluster or a zero flag: qemu-img map's "present" for this
 *     layer), 0 when it is unallocated here, and runs differing in it are
 *     separate. ext.len >= 1 unless len is 0, which answers at once, with
 *     no I/O: {off, 0, ZERO, host 0, allocated 0}. Loop off += ext.len to walk a disk: the cost is one step
 *     per L2 table touched plus one per cluster in it, and an L2 table
 *     that is not there (with no backing file) is skipped whole, so a
 *     sparse disk of any size maps in a few calls. q2w_map_snapshot(img,
 *     &sn, off, len, &ext) maps a snapshot's view (its size as for
 *     q2w_read_snapshot). Neither changes the image.
 *   Backing file (each an operation driven the same way):
 *     q2w_set_backing(img, name, fmt, size)   the header names another
 *                                          backing file (NULL: none; fmt
 *                                          NULL: no format extension), as
 *                                          qemu-img rebase -u; the handle
 *                                          then reads `size` bytes of it
 *     q2w_make_empty(img)                  every active cluster dropped:
 *                                          the disk reads from the backing
 *                                          file again (qemu's make_empty)
 *   Commit and rebase: jobs over two files, the overlay (TOP) and OTHER.
 *     q2w_commit(job, top, base_kind, base, raw_size, flags, buf, len)
 *       writes the overlay's data and zeroed ranges into its backing file
 *       - a raw file (Q2W_BACKING_RAW, raw_size bytes, served by the job's
 *       own ops) or a qcow2 image open writable (Q2W_BACKING_QCOW2) - grown
 *       first when shorter, flushes it, then empties the overlay
 *       (q2w_make_empty) unless flags has Q2W_COMMIT_KEEP (qemu-img commit
 *       -d). The base's own snapshots keep their clusters (copy-on-write).
 *     q2w_rebase(job, top, old_backing, new_kind, new_backing, raw_size,
 *       name, fmt, buf, len) keeps the overlay's view while it moves onto
 *       another backing file (raw, qcow2 open read-only, or
 *       Q2W_BACKING_NONE with name NULL: flatten): every run the overlay
 *       does not hold (q2w_map: data it holds costs nothing) is read
 *       through the old backing file and the new one, and each cluster
 *       that differs is written into the overlay (zeros as
 *       q2w_write_zeroes); then a flush and q2w_set_backing. Runs a qcow2
 *       new file holds nothing in are not read from it; given the old
 *       backing file's own handle (old_backing: the qcow2 image the
 *       overlay's backing reads come from, open read-only; or NULL), runs
 *       that read zeros in both files are skipped unread (its map, in
 *       Q2W_JOB_OLD batches). Snapshots of the overlay read their
 *       unallocated clusters from whatever the header names, as in qemu.
 *     Drive a job: q2w_job_batch(job, &n, &file) is the batch to execute
 *     and says on which file (Q2W_JOB_TOP: the overlay, its backing reads
 *     from its backing file as always - for a rebase the old one;
 *     Q2W_JOB_OTHER: the base or the new backing file, whose own backing
 *     reads go to its backing file; Q2W_JOB_OLD: the old backing file's
 *     own handle, when a rebase was given one); q2w_job_resume(job, io_rc) until it
 *     returns Q2W_OK or an error; q2w_job_progress(job, &done, &total) in
 *     bytes of the overlay; q2w_job_error(job) the context (from the image
 *     that met it; job->file says which). buf (len bytes, at least two
 *     clusters of the overlay) is the job's only memory: a chunk of half
 *     of it is read and written at a time. Both handles stay the caller's:
 *     close them after (a commit leaves the base's handle knowing its new
 *     size). An executor of a rebase must give zeros for backing reads past
 *     the old backing file's end (the op contract), and for an overlay
 *     that had none.
 *   Compress (no I/O): q2w_deflate(in, len, out, cap, work) - raw deflate
 *     of a cluster's bytes as qemu stores a compressed cluster (back-
 *     references within 4 KiB: qemu inflates with a 4 KiB window), in
 *     Q2W_DEFLATE_WORK bytes of the caller's; 0 when it does not fit in
 *     cap (qemu's rule: a cluster that does not shrink below its size is
 *     stored as it is).
 *   q2w_write_compressed(img, off, src, len, work, work_len): one whole
 *     cluster (or the disk's short last one) stored compressed, placed as
 *     qemu places a stream (right after the last one, in the same host
 *     cluster and the next; each host cluster it touches counted once
 *     more); a cluster that does not shrink below its size is written as
 *     it is; a compressed one may only go where nothing is allocated
 *     (Q2W_ERR_UNSUPPORTED, as qemu refuses it); zstd images refused.
 *     work: Q2W_CZ_WORK(cluster size) bytes, untouched until the
 *     operation ends. qemu-img convert -c's clusters, qcow2w import -c.
 *   Drive: q2w_batch(img, &n) the ops to execute, q2w_resume(img, io_rc).
 *   Inspect: q2w_info_get(img, &info), q2w_error(img), q2w_strerror(code).
 *     q2w_info_get also works after q2w_open failed with Q2W_ERR_BACKING
 *     (the header was read: the backing name and format are there), so a
 *     caller can open the backing file and try again.
 *   Check: q2w_check(io, work, work_len, flags, &result) - the full scan
 *     qemu-img check does, over every structure that holds clusters: the
 *     header, refcount table and blocks, L1/L2 tables (standard, zero and
 *     compressed entries), the snapshot table and snapshot L1s, and the
 *     persistent bitmaps (directory, tables, data clusters) while autoclear
 *     bit 0 says they are current. Q2W_CHECK_REPAIR_LEAKS (or
 *     q2w_repair_leaks) lowers leaked refcounts; Q2W_CHECK_REPAIR_ALL
 *     rebuilds every refcount from the references as qemu-img check -r all
 *     does (counts raised too, a missing refcount block made on the first
 *     free cluster of its range, COPIED set right) and then clears the
 *     dirty bit of a lazy-refcount image. A structure qcow2w does not know
 *     (an unknown header extension, unknown compatible or autoclear bits,
 *     a bitmap entry that does not validate) is a finding, and then no
 *     repair frees anything: q2w_check returns Q2W_ERR_UNSUPPORTED with
 *     the findings complete and nothing written.
 *     q2w_check_work_size(io, &bytes, &err) says how much work memory it
 *     needs (2 clusters + 4 bytes per cluster of the file), or why the
 *     header does not validate.
 *   POSIX (unless Q2W_NO_STDIO): q2w_posix_exec(img, fd, backing, flags)
 *     runs one batch; q2w_posix_run(img, fd, backing, rc) loops while
 *     Q2W_PENDING (q2w_posix_run_flags with Q2W_POSIX_NO_FLUSH skips the
 *     flushes); q2w_posix_job_run(job, files, progress, user, rc) runs a
 *     commit or rebase to its end (files[Q2W_JOB_TOP / _OTHER / _OLD]:
 *     each file's descriptor and backing reader); q2w_posix_io(&io, fd, &fdbox) makes a q2w_io for q2w_check;
 *     q2w_pread_full / q2w_pwrite_full.
 *
 * OPS (what an executor must do, in array order)
 *
 *   Q2W_OP_READ          pread(off, len) into dst; bytes past the end of
 *                        the file read as zeros
 *   Q2W_OP_WRITE         pwrite(off, len) from src; src == NULL writes zeros
 *   Q2W_OP_FLUSH         fdatasync; every earlier write is durable after it
 *   Q2W_OP_BACKING_READ  read len bytes at virtual offset off of the backing
 *                        file into dst; bytes past its end read as zeros
 *   An op's memory (dst, src) stays valid and unchanged until q2w_resume.
 *   A failed op: pass its negative code to q2w_resume; the handle then
 *   refuses everything with Q2W_ERR_FAILED until it is reopened (the image
 *   on disk is consistent - leaks at most - and the caller knows which
 *   operation was not acknowledged), the policy databases use for fsync.
 *
 * MEMORY
 *
 *   Everything lives in cfg.mem: one cluster of scratch, then cache slots
 *   of one cluster each for L1 and refcount-table pieces, L2 tables and
 *   refcount blocks, and the deferred-free list. When cfg.mem has room for
 *   two more clusters beside Q2W_MIN_SLOTS slots they hold one compressed
 *   cluster's bytes; without them, reading or writing into a compressed
 *   cluster is Q2W_ERR_NOMEM ("cfg.mem: compressed cluster buffer"). At least
 *   Q2W_MIN_SLOTS slots are needed: q2w_open returns Q2W_ERR_NOMEM with
 *   the needed byte count in q2w_error(img)->needed once the cluster size
 *   is known. cfg.ops_cap must be >= Q2W_MIN_OPS. The L1 table and the
 *   refcount table are cached piece by piece, so images of any size work
 *   with a fixed amount of memory.
 *
 * DESIGN NOTES
 *
 *   Crash-consistency order (qemu's, without lazy refcounts): metadata is
 *   written back in checkpoints, each in this order with flushes between:
 *     refcount blocks (and any new data) -> flush -> refcount-table pieces
 *     -> flush -> L2 tables -> flush -> L1 pieces -> flush
 *   so a refcount increase is durable before anything points at the
 *   cluster, and data is durable before the L2 entry that exposes it.
 *   Refcount decreases are deferred: a dropped reference is queued and its
 *   refcount lowered only after a checkpoint has made the reference's
 *   removal durable. Table growth writes the new table, flushes, switches
 *   the header pair with one write, flushes, then frees the old table.
 *   Hence an on-disk refcount is never below the true count: a crash leaves
 *   leaks at most, and what a completed q2w_flush covered is never lost.
 *
 *   Refcounts count reference paths; COPIED is set exactly when the
 *   refcount is 1. A write into a data cluster or an L2 table whose
 *   refcount is above 1 (shared with a snapshot) copies it first and never
 *   changes the shared one; the copy of an L2 table leaves its data
 *   clusters' refcounts as they were (one path each before and after).
 *   The old cluster's refcount drops, deferred as above. So copy-on-write
 *   needs no flush of its own: qemu flushes on every such write.
 *
 *   Snapshot create: the active L1 is copied (from disk, after a
 *   checkpoint), every path's refcount goes up and COPIED is cleared in
 *   the active tables, a checkpoint makes that durable, the new snapshot
 *   table (old entries + the new one, v3 extra data of 24 bytes with the
 *   disk size, id = the next integer) is written and flushed, and one
 *   write switches the header pair (nb_snapshots, snapshots_offset). A
 *   refcount that would overflow its width refuses the snapshot
 *   (Q2W_ERR_LIMIT; 1-bit refcounts hold no snapshot of allocated data):
 *   before anything changes, or - when several compressed descriptors
 *   share the host cluster that overflows - during the bump, which is
 *   then undone (counts and COPIED as they were, the L1 copy freed). Delete writes the table without the entry, switches
 *   the header, then lowers the refcounts of the snapshot's paths, frees
 *   what reaches zero and sets COPIED again where a refcount is back to 1.
 *   Apply raises the counts of the snapshot's paths first (COPIED
 *   cleared: its tables are now shared), makes a new L1 table from its L1
 *   and switches the header (size, L1 size and offset) in one write, then
 *   lowers the counts of the old active paths and frees what reaches zero;
 *   a crash leaks only. Its disk size is the entry's (the current size for
 *   an entry without one), smaller or larger than the current one.
 *   Snapshot entries longer than a cluster are refused (Q2W_ERR_LIMIT);
 *   names are 1..1023 bytes.
 *
 *   Allocation is first fit from a moving hint. A new
 *   refcount block is placed on the first cluster of the range it covers
 *   and counts itself; a new refcount table (grown by half) is placed with
 *   its blocks past everything the old table covered, and describes itself.
 *
 *   Lazy refcounts: an image whose dirty bit is set is refused for writing
 *   (Q2W_ERR_DIRTY): repair it first with q2w_check(...,
 *   Q2W_CHECK_REPAIR_ALL, ...) or `qemu-img check -r all`. Reading it is
 *   fine. The autoclear bits (persistent bitmaps, which qcow2w does not
 *   keep up to date, and unknown ones) are cleared before the first
 *   change, as the spec asks: qemu then treats the bitmaps as stale and
 *   their clusters as leaks, and so does q2w_check.
 *   Header extensions are never rewritten, so unknown ones are preserved.
 *   Backing file names are 1..1023 bytes, backing format names 1..15
 *   (qemu's buffer is 16 bytes: a longer format extension is
 *   Q2W_ERR_HEADER at open, as qemu refuses it, and Q2W_ERR_ARG at create).
 *
 *   Limit: growing the L1 table needs one run of free clusters shorter
 *   than a refcount block's range (clusters * 8 / refcount_bits clusters:
 *   with 512 B clusters and 16-bit refcounts an L1 of 255 clusters, about
 *   510 MiB of virtual disk); larger growth is Q2W_ERR_LIMIT. Creating an
 *   image of any size qemu allows is not limited.
 *
 *   Compressed clusters (qemu-img convert -c): read by inflating them
 *   (raw deflate, zlib compression type; the inflater is in this header);
 *   a write into one allocates a new cluster, fills the rest of it from
 *   the inflated data, and drops this path's reference to every host
 *   cluster the compressed data touches (neighbouring compressed clusters
 *   share host clusters: each descriptor counts once on each); zeroes and
 *   discard drop it the same way; snapshot create and delete count them.
 *   q2w_write_compressed writes them (zlib type only). zstd-compressed images
 *   (compression type 1) open, snapshot and check; reading a compressed
 *   cluster of one is Q2W_ERR_UNSUPPORTED (qemu-img convert reads it).
 *   Compressed data that does not inflate to a whole cluster is
 *   Q2W_ERR_METADATA ("compressed cluster data").
 *
 *   Commit and rebase after a crash: a commit writes nothing into the
 *   overlay until the base is durable (its data, its grown size), so a
 *   crash before leaves the overlay whole - its view is unchanged, commit
 *   again; a crash while it is emptied leaves clusters that read the same
 *   from the overlay or the base, with leaks at most (q2w_check repairs
 *   them). A rebase copies into the overlay what reads the same through
 *   the old file, makes it durable, then switches the header with one
 *   write of cluster 0 (the format extension and the name; the other
 *   extensions kept): before the switch the overlay reads as before
 *   through the old file, after it the same through the new one; rebase
 *   again. The header rewrite spans more than one sector when the name
 *   ends past the first 512 bytes of the file - a tear there is the one
 *   window (qemu rewrites the header the same way).
 *
 *   Amend (the version): to v2, every zero flag - v2 has no bit for it -
 *   in the active tables and every snapshot's becomes an unallocated
 *   cluster, or over a backing file a new cluster of zeros (counted once
 *   per table path, written before the entry names it); a cluster a zero
 *   flag kept loses those paths after. The views never change, so a crash
 *   there leaks at most. Then cluster 0 is rewritten in one write as a
 *   72-byte v2 header, the extensions kept (the feature name table
 *   dropped), the backing name after them. Refused (Q2W_ERR_UNSUPPORTED)
 *   before any change: refcounts other than 16 bits, zstd compression,
 *   persistent bitmaps (qemu drops them; qcow2w keeps no bitmap), a
 *   snapshot of another disk size or a VM state past 4 GiB (as qemu). To
 *   v3: snapshot entries with under 16 bytes of extra data are rewritten
 *   in a new table first (24 bytes: VM state size, the current disk size,
 *   an unknown instruction count, as qemu), then cluster 0 as a 112-byte
 *   v3 header with no feature bits, naming the new table in the same
 *   write. The one window is that write when it spans more than a sector
 *   (as for q2w_set_backing); Q2W_ERR_LIMIT when it does not fit cluster 0.
 *
 *   Points of no return: snapshot create, snapshot delete and resize
 *   switch the header with one write. Every refusal the image's contents
 *   can cause is decided before it (delete walks the snapshot's tables and
 *   the active ones first); after it only an I/O error can stop the
 *   operation, and the image is then consistent with leaks at most.
 *
 *   Not supported (refused with Q2W_ERR_FEATURE at open, or
 *   Q2W_ERR_UNSUPPORTED when an operation meets it): encryption, external
 *   data files, extended L2 entries, shrinking, VM state in snapshots
 *   (vm_state_size is reported, never written). Reads of unallocated
 *   clusters go to the backing file through Q2W_OP_BACKING_READ.
 *
 *   File size: a new cluster at the end of the file is not padded; the
 *   file may end inside its last cluster (qemu accepts this; bytes past
 *   the end read as zeros). Growing the file is the executor's business.
 *
 *   Determinism: no clock, no randomness, no allocation; the same calls
 *   and I/O results give the same op stream.
 *
 * ERRORS
 *
 *   Every call returns a q2w_result. q2w_error(img) gives the context of the
 *   last error: code, byte offset in the image file (or the virtual offset
 *   for range errors), the table entry index, the field or table name, and
 *   for NOMEM the bytes needed. An operation's error is what q2w_error
 *   gives when the operation returns it, even where a call refused while
 *   its last batch was pending (BUSY) came between. A refused operation
 *   changes nothing; an operation that fails half way has left the image
 *   consistent. A read that fails leaves its dst unspecified (a
 *   compressed cluster that does not inflate may have written part of it).
 */
#ifndef QCOW2W_H
#define QCOW2W_H

/* The POSIX executor needs pread/pwrite/fdatasync; a strict -std=c99 build
 * hides them unless a feature macro is set before the first libc header.
 * Include qcow2w.h first in the implementation file, or define one. */
#if defined(QCOW2W_IMPLEMENTATION) || defined(ALK_IMPLEMENTATION)
/* (once glibc's <features.h> has run, a define here changes nothing: the
 * check at the executor then says what to do) */
#if !defined(Q2W_NO_STDIO) && !defined(_POSIX_C_SOURCE) &&                     \
    !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) &&                        \
    !defined(_DEFAULT_SOURCE) && !defined(_FEATURES_H)
#define _POSIX_C_SOURCE 200809L
#endif
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef QCOW2W_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define Q2WDEF static __attribute__((unused))
#else
#define Q2WDEF static
#endif
#else
#define Q2WDEF extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define Q2W_MIN_SLOTS 8u
#define Q2W_MIN_OPS 8u
#define Q2W_MAX_CLUSTER_BITS 21u
#define Q2W_MIN_CLUSTER_BITS 9u
#define Q2W_MAX_L1_BYTES (32u << 20)
#define Q2W_MAX_REFTABLE_BYTES (8u << 20)
#define Q2W_MAX_BACKING_NAME 1023u
#define Q2W_MAX_BACKING_FMT 15u /* qemu's format name buffer is 16 bytes */
#define Q2W_MAX_HOST_OFFSET (1ull << 56)

#define Q2W_RESULT_LIST(X)                                                     \
    X(Q2W_OK, 0, "ok")                                                         \
    X(Q2W_PENDING, 1, "i/o pending: execute the batch, then q2w_resume")       \
    X(Q2W_ERR_ARG, -1, "invalid argument")                                     \
    X(Q2W_ERR_NOMEM, -2, "caller memory or op buffer too small")               \
    X(Q2W_ERR_MAGIC, -3, "not a qcow2 image (bad magic)")                      \
    X(Q2W_ERR_VERSION, -4, "unsupported qcow2 version")                        \
    X(Q2W_ERR_HEADER, -5, "invalid header field or extension")                 \
    X(Q2W_ERR_FEATURE, -6, "image uses an unsupported feature")                \
    X(Q2W_ERR_CORRUPT, -7, "image is marked corrupt: refused for writing")     \
    X(Q2W_ERR_DIRTY, -8,                                                       \
      "image is dirty (lazy refcounts): repair it before writing")             \
    X(Q2W_ERR_READONLY, -9, "image was opened read-only")                      \
    X(Q2W_ERR_RANGE, -10, "offset or length outside the virtual disk")         \
    X(Q2W_ERR_METADATA, -11, "invalid metadata entry met")                     \
    X(Q2W_ERR_UNSUPPORTED, -12, "operation needs an unsupported feature")      \
    X(Q2W_ERR_LIMIT, -13, "a qcow2 format limit would be exceeded")            \
    X(Q2W_ERR_IO, -14, "the executor reported an i/o error")                   \
    X(Q2W_ERR_FAILED, -15, "handle failed after an i/o error: reopen it")      \
    X(Q2W_ERR_BUSY, -16, "another operation is still pending")                 \
    X(Q2W_ERR_BACKING, -17, "image needs its backing file")                   \
    X(Q2W_ERR_NOT_FOUND, -18, "no snapshot of that name or index")

typedef enum q2w_result {
#define Q2W__ENUM(name, value, text) name = value,
    Q2W_RESULT_LIST(Q2W__ENUM)
#undef Q2W__ENUM
    Q2W_RESULT_END_
} q2w_result;

typedef struct q2w_error_info {
    int code;
    uint64_t offset;    /* image-file byte offset (virtual for RANGE) */
    uint64_t index;     /* table entry index, when a table is involved;
                           RANGE: the length asked for; LIMIT met by an
                           operation: the value over the limit (for an
                           entry read from the snapshot table: its
                           index) */
    uint64_t needed;    /* NOMEM: bytes of cfg.mem needed; LIMIT met by
                           q2w_create: the value; a refusal of the header
                           or an extension: the value read there (an
                           extension's length, or its type for an
                           extension qcow2w lacks) */
    const char *what;   /* field or table: "header.cluster_bits", "l2", ... */
} q2w_error_info;

enum q2w_op_kind {
    Q2W_OP_READ = 1,
    Q2W_OP_WRITE = 2,
    Q2W_OP_FLUSH = 3,
    Q2W_OP_BACKING_READ = 4
};

typedef struct q2w_op {
    int kind;                 /* enum q2w_op_kind */
    uint64_t off;             /* file offset (virtual for BACKING_READ) */
    size_t len;
    unsigned char *dst;       /* READ, BACKING_READ */
    const unsigned char *src; /* WRITE; NULL = zeros */
} q2w_op;

typedef struct q2w_config {
    void *mem;             /* caches and scratch, see MEMORY */
    size_t mem_len;
    q2w_op *ops;           /* the batch buffer */
    size_t ops_cap;        /* >= Q2W_MIN_OPS */
    uint64_t file_size;    /* current length of the image file */
    int writable;
    /* Backing file: when the image names one, has_backing = 1 and
     * backing_size = its virtual size, or no_backing = 1 to read
     * unallocated clusters as zeros (otherwise Q2W_ERR_BACKING). */
    int has_backing;
    int no_backing;
    uint64_t backing_size;
    size_t max_slots;      /* 0 = as many as fit in mem */
    size_t max_frees;      /* deferred-free ranges kept before a forced
                              checkpoint; 0 = 64 */
} q2w_config;

typedef struct q2w_info {
    int version;
    uint32_t cluster_size;
    uint32_t refcount_bits;
    uint64_t size;
    uint64_t l1_offset, refcount_table_offset, snapshots_offset;
    uint32_t l1_size, refcount_table_clusters, nb_snapshots;
    uint64_t incompatible, compatible, autoclear;
    uint32_t header_length;
    uint32_t compression_type;  /* 0 zlib (deflate), 1 zstd */
    const char *backing_name;   /* NUL-terminated copy, or NULL */
    const char *backing_format; /* NUL-terminated copy, or NULL */
    uint64_t file_end;          /* the file's end as planned so far: past
                                   every write planned and every metadata
                                   cluster placed (a refcount block or L2
                                   table waiting in the cache is written
                                   whole by a later checkpoint); the file
                                   is this long once a flush or close has
                                   run, if it was cfg.file_size at open */
    size_t cache_slots;
} q2w_info;

typedef struct q2w_create_opts {
    uint64_t size;            /* virtual size in bytes */
    uint32_t cluster_size;    /* 512 .. 2 MiB, power of two; 0 = 65536 */
    uint32_t refcount_bits;   /* 1,2,4,..,64; 0 = 16; v2 only 16 */
    int version;              /* 2 or 3; 0 = 3 */
    const char *backing;      /* backing file name or NULL */
    const char *backing_fmt;  /* "qcow2", "raw" ... or NULL */
} q2w_create_opts;

#define Q2W_MAX_SNAPSHOT_NAME 1023u
#define Q2W_MAX_SNAPSHOTS 65536u

/* One internal snapshot, as q2w_snapshot_get / q2w_snapshot_find give it. */
typedef struct q2w_snapshot {
    uint32_t index;            /* position in the snapshot table */
    char id[64];               /* NUL-terminated */
    char name[Q2W_MAX_SNAPSHOT_NAME + 1];
    uint16_t id_len, name_len; /* the entry's byte counts: id and name hold
                                  that many bytes then a NUL; an entry
                                  whose bytes hold a NUL (qemu does not
                                  refuse one) shows a shorter strlen */
    uint64_t l1_offset;
    uint32_t l1_size;
    uint32_t date_sec, date_nsec;
    uint64_t vm_clock_ns;
    uint64_t vm_state_size;
    uint64_t disk_size;        /* virtual size then (0: not recorded) */
    uint64_t entry_offset;     /* byte offset of its entry in the table */
    uint32_t entry_len;
} q2w_snapshot;

/* What q2w_map says about a run of virtual bytes: how a read of it is
 * served. */
enum q2w_extent_kind {
    Q2W_EXTENT_DATA = 1,       /* allocated: the bytes are at `host` in the
                                  image file, contiguous for `len` bytes */
    Q2W_EXTENT_ZERO = 2,       /* reads as zeros: zero flag, or unallocated
                                  with nothing backing it */
    Q2W_EXTENT_BACKING = 3,    /* unallocated: read from the backing file */
    Q2W_EXTENT_COMPRESSED = 4  /* compressed clusters: read with q2w_read */
};

typedef struct q2w_extent {
    uint64_t off;   /* virtual offset: the one asked for */
    uint64_t len;   /* bytes of one kind from off (0 only when asked 0) */
    int kind;       /* enum q2w_extent_kind */
    uint64_t host;  /* DATA: image-file offset of `off`; ZERO by a zero flag
                       on a preallocated cluster: that cluster's offset
                       (qemu's ZERO_ALLOC); else 0 */
    int allocated;  /* 1: the image itself says what the bytes are (DATA,
                       COMPRESSED, ZERO by a zero flag); 0: unallocated
                       here (BACKING, or ZERO with nothing under it) -
                       qemu-img map's "present" for this layer */
} q2w_extent;

/* Blocking I/O for the checker: read/write return 0 or a negative code;
 * reads past the end of the file return zeros. */
typedef struct q2w_io {
    int (*read)(void *user, uint64_t off, void *dst, size_t len);
    int (*write)(void *user, uint64_t off, const void *src, size_t len);
    int (*flush)(void *user);
    void *user;
    uint64_t file_size;
} q2w_io;

enum q2w_finding_kind {
    Q2W_FIND_LEAK = 1,        /* stored refcount > references (harmless);
                                 also a refcount past the end of the file,
                                 which qemu-img check does not look at */
    Q2W_FIND_REFCOUNT,        /* stored refcount < references: corruption */
    Q2W_FIND_COPIED,          /* COPIED flag disagrees with refcount == 1 */
    Q2W_FIND_UNALIGNED,       /* a table or cluster offset is not aligned */
    Q2W_FIND_PAST_EOF,        /* a reference points past the end of file
                                 (offset: the cluster it names; stored and
                                 computed 0) */
    Q2W_FIND_RESERVED,        /* reserved bits set in an entry */
    Q2W_FIND_ZERO_FLAG_V2,    /* zero flag in a version 2 image */
    Q2W_FIND_HEADER,          /* the header itself does not validate */
    Q2W_FIND_BITMAP,          /* a bitmaps extension, directory entry or
                                 bitmap table entry that does not validate
                                 (a corruption; repair then frees nothing).
                                 The extension (at least 24 bytes, the
                                 reserved field 0, 1..65535 bitmaps, a
                                 directory of 24 bytes a bitmap up to
                                 64 MiB, cluster-aligned below 2^56):
                                 offset = the directory, where = the
                                 extension in cluster 0, stored = its
                                 length, computed = its count. A directory
                                 entry (inside the directory; its table
                                 cluster-aligned below 2^56, at most 1 GiB,
                                 present when it has entries; extra data
                                 at most 1 MiB): offset = the table (or the
                                 entry, when the directory ends first:
                                 where = the extension, stored = its place
                                 in the directory), where = the entry,
                                 stored = the table's size, computed = the
                                 bitmap's index; the first such entry ends
                                 the walk. A table entry (reserved bits
                                 clear; bit 0 only without a cluster):
                                 offset = its cluster, where = the entry,
                                 stored = its value, computed = the
                                 bitmap's index, each one a finding */
    Q2W_FIND_UNKNOWN,         /* a structure qcow2w does not know: a header
                                 extension of unknown type (stored = type),
                                 unknown compatible or autoclear bits
                                 (stored = the bits). Not a corruption, but
                                 it may hold clusters that look leaked, so
                                 repair frees nothing while one is there */
    Q2W_FIND_SNAPSHOT_INCOMPLETE /* a version 3 snapshot entry with less
                                 than 16 bytes of extra data (no room for
                                 the large VM state size and the disk
                                 size the spec asks for): a corruption, as
                                 qemu-img check counts it; offset = the
                                 entry's L1, where = the entry, stored =
                                 its extra data size. No repair rewrites
                                 the table (qemu-img check -r all does) */
};

#define Q2W_CHECK_MAX_FINDINGS 32u
#define Q2W_CHECK_REPAIR_LEAKS 1u
/* Rebuild refcounts from the references, as qemu-img check -r all: leaks
 * lowered, counts below their references raised, a missing refcount block
 * created (on a free cluster of the range it covers), COPIED set right,
 * and the dirty bit of a lazy-refcount image cleared once nothing is left
 * wrong. */
#define Q2W_CHECK_REPAIR_ALL 2u

typedef struct q2w_finding {
    int kind;            /* enum q2w_finding_kind */
    uint64_t offset;     /* host offset of the cluster or table concerned */
    uint64_t where;      /* host offset of the entry that says so (0: n/a) */
    uint64_t stored;     /* refcount stored / entry value */
    uint64_t computed;   /* references found */
} q2w_finding;

typedef struct q2w_check_result {
    uint64_t corruptions;
    uint64_t leaks;
    uint64_t leaks_fixed;
    uint64_t copied_fixed;      /* COPIED flags set right after leaks were
                                   repaired (a refcount back to 1), as
                                   qemu-img check -r leaks does */
    uint64_t corruptions_fixed; /* REPAIR_ALL: refcounts raised to their
                                   references, refcount blocks created */
    uint64_t unknown;           /* Q2W_FIND_UNKNOWN findings */
    int dirty_cleared;          /* REPAIR_ALL cleared the dirty bit */
    uint64_t check_errors;      /* i/o errors while checking */
    uint64_t total_clusters;    /* virtual clusters */
    uint64_t allocated_clusters;/* virtual clusters with data (or
                                   compressed, or zero with a host
                                   cluster) in the active view */
    uint64_t fragmented_clusters; /* of those: not right after the one
                                   before in their L2 table (compressed
                                   ones always), as qemu-img check counts */
    uint64_t compressed_clusters; /* of those: compressed */
    uint64_t image_end_offset;  /* end of the highest referenced cluster */
    size_t n_findings;          /* recorded, <= Q2W_CHECK_MAX_FINDINGS */
    q2w_finding findings[Q2W_CHECK_MAX_FINDINGS];
    q2w_error_info error;       /* when the check itself failed */
} q2w_check_result;

/* Image handle. Do not rely on the size or contents of this type. */
typedef struct q2w__slot {
    uint64_t key;        /* host offset of the cached cluster */
    uint32_t lru;
    uint32_t pin;        /* == img->pin_epoch: in use by the current step */
    uint8_t kind;        /* Q2W__K_* */
    uint8_t state;       /* 0 empty, 1 loading, 2 valid */
    uint8_t dirty;
} q2w__slot;

typedef struct q2w__free {
    uint64_t cluster;    /* first cluster index */
    uint64_t count;
} q2w__free;

typedef struct q2w_image {
    /* geometry and header */
    int version;
    uint32_t cluster_bits, refcount_order, header_length, compression_type;
    uint64_t cluster_size, size;
    uint64_t l1_offset, rt_offset, snapshots_offset;
    uint32_t l1_size, rt_clusters, nb_snapshots;
    uint64_t incompatible, compatible, autoclear;
    uint64_t backing_offset;
    uint32_t backing_len;
    char backing_name[Q2W_MAX_BACKING_NAME + 1];
    char backing_fmt[32];
    int has_backing_name, has_backing, writable, no_backing_ok;
    uint64_t backing_size;
    /* allocation */
    uint64_t file_end;     /* bytes: nothing allocated at or past this */
    uint64_t free_hint;    /* clusters below it are known used */
    /* memory */
    unsigned char *scratch;
    unsigned char *czbuf;    /* 2 clusters: one compressed cluster's bytes,
                                or NULL when cfg.mem had no room */
    uint64_t cz_entry;       /* the L2 entry whose bytes czbuf holds */
    int cz_state;            /* 0 none, 1 being read, 2 there */
    unsigned char *slot_mem;
    q2w__slot *slots;
    size_t n_slots;
    q2w__free *frees;
    size_t n_frees, cap_frees, n_safe_frees, ckpt_boundary;
    uint32_t lru_clock, pin_epoch;
    q2w_op *ops;
    size_t ops_cap, n_ops;
    unsigned char hdrbuf[32];
    unsigned char head[112];   /* the fixed header, read first by open */
    void *mem;
    size_t mem_len, max_slots;
    int deferred_err, opened;
    q2w_error_info deferred_info;   /* deferred_err's context */
    /* the operation in progress */
    int op, sub, phase, ckpt_phase, failed, prepared;
    uint64_t op_off, op_len, op_pos, op_arg;
    const unsigned char *op_src;
    unsigned char *op_dst;
    /* a run of free clusters (q2w__run_alloc): where it starts, the index
     * in it of the next cluster to find or take, where the search goes on */
    uint64_t run_start, run_next, run_cursor;
    int run_phase;
    uint64_t copy_done;      /* bytes q2w__copy has copied */
    /* refcount-table growth: the new refcount blocks start at cluster
     * grow_base, the new table follows them; grow_copied clusters of the
     * old table are copied */
    uint64_t grow_base, grow_blocks, grow_table_clusters, grow_copied;
    int grow_phase;          /* (its own: it runs inside any operation's
                                phases) */
    int writes_since_flush;
    /* snapshots */
    uint64_t snap_len;       /* bytes of the snapshot table */
    uint64_t snap_max_id;    /* largest numeric id in it */
    /* the table walk: byte offset in the table of the next entry, of the
     * cluster of the table in scratch (when walk_loaded), the entry's index */
    uint64_t walk_pos, walk_scratch_pos, walk_index;
    int walk_loaded;
    /* a pass over an L1 table and its L2 tables (see q2w__pass): the L1
     * entry and the step in its L2 table; where a bump stopped */
    uint64_t pass_l1_index, pass_l2_step;
    uint64_t pass_stop_l1_index, pass_stop_l2_step;
    int pass_kind;           /* the L1's cache kind: COPIED is kept in the
                                active L1 only */
    uint64_t pass_l2_rc;     /* EXPAND: the refcount of the L2 table */
    int bm_ext;              /* a bitmaps extension is in the header */
    int copy_read;           /* q2w__copy_l1: the piece is in scratch */
    int hdr_step;            /* q2w__header_rewrite: 0 read, 1 write, 2 done */
    /* snapshot apply: the active L1 it replaces, the new one's size */
    uint64_t ap_old_l1_off;
    uint32_t ap_old_l1_size, ap_l1_size;
    q2w_error_info sn_err;   /* its refusal, given once it is undone */
    uint64_t sn_l1_off, sn_pos, sn_len, sn_new_off;
    uint32_t sn_l1_size, sn_index;
    const char *sn_name;
    size_t sn_name_len;
    q2w_snapshot *sn_out;
    q2w_extent *map_out;
    const char *sb_name, *sb_fmt;   /* q2w_set_backing's, until it ends */
    /* q2w_write_compressed: the caller's work area, the stream's length
     * in it, and where the next compressed bytes may go (the byte after
     * the last stream written, inside its host cluster; 0: none) */
    unsigned char *cw_work;
    size_t cw_len;
    uint64_t cw_next;
    uint32_t sn_date_sec, sn_date_nsec;
    uint64_t sn_vm_clock;
    unsigned char snapbuf[40 + 24 + 24 + Q2W_MAX_SNAPSHOT_NAME + 1];
    q2w_error_info err;
} q2w_image;

Q2WDEF int q2w_create(const q2w_create_opts *opts, void *buf, size_t cap,
                      uint64_t *image_len, q2w_error_info *err);
/* qemu-img measure's figures for a qcow2 image of opts (size, cluster
 * size, refcount bits; 0: the defaults) holding data_bytes of allocated
 * clusters (a multiple of the cluster size: every cluster that holds any
 * data): *fully_allocated every cluster written, *required only those.
 * The size is rounded up to whole clusters, as qemu rounds it; metadata
 * is qemu's estimate (header, every L2 table, the L1 table, refcount
 * blocks and table at their fixed point), not what q2w_create lays out.
 * Q2W_OK, or Q2W_ERR_ARG (err says the field) / Q2W_ERR_LIMIT (an L1 table
 * past 32 MiB: "try a larger cluster size"). */
Q2WDEF int q2w_measure(const q2w_create_opts *opts, uint64_t data_bytes,
                       uint64_t *required, uint64_t *fully_allocated, q2w_error_info *err);
Q2WDEF int q2w_open(q2w_image *img, const q2w_config *cfg);
Q2WDEF int q2w_read(q2w_image *img, uint64_t off, void *dst, size_t len);
Q2WDEF int q2w_write(q2w_image *img, uint64_t off, const void *src,
                     size_t len);
Q2WDEF int q2w_write_zeroes(q2w_image *img, uint64_t off, uint64_t len);
Q2WDEF int q2w_discard(q2w_image *img, uint64_t off, uint64_t len);
Q2WDEF int q2w_flush(q2w_image *img);
Q2WDEF int q2w_resize(q2w_image *img, uint64_t new_size);
Q2WDEF int q2w_make_empty(q2w_image *img);
/* work for q2w_write_compressed with cluster size cs */
#define Q2W_CZ_WORK(cs) (Q2W_DEFLATE_WORK + 2 * (size_t)(cs))
Q2WDEF int q2w_write_compressed(q2w_image *img, uint64_t off, const void *src, size_t len,
                                void *work, size_t work_len);
Q2WDEF int q2w_set_backing(q2w_image *img, const char *name, const char *fmt,
                           uint64_t backing_size);
Q2WDEF int q2w_close(q2w_image *img);
Q2WDEF int q2w_snapshot_get(q2w_image *img, uint32_t index,
                            q2w_snapshot *out);
Q2WDEF int q2w_snapshot_find(q2w_image *img, const char *name,
                             q2w_snapshot *out);
Q2WDEF int q2w_snapshot_create(q2w_image *img, const char *name,
                               uint32_t date_sec, uint32_t date_nsec,
                               uint64_t vm_clock_ns);
Q2WDEF int q2w_snapshot_delete(q2w_image *img, const char *name);
Q2WDEF int q2w_snapshot_apply(q2w_image *img, const char *name);
Q2WDEF int q2w_amend_compat(q2w_image *img, int version);
Q2WDEF int q2w_read_snapshot(q2w_image *img, const q2w_snapshot *sn,
                             uint64_t off, void *dst, size_t len);
Q2WDEF int q2w_map(q2w_image *img, uint64_t off, uint64_t len,
                   q2w_extent *out);
Q2WDEF int q2w_map_snapshot(q2w_image *img, const q2w_snapshot *sn,
                            uint64_t off, uint64_t len, q2w_extent *out);
Q2WDEF int q2w_resume(q2w_image *img, int io_rc);
Q2WDEF const q2w_op *q2w_batch(const q2w_image *img, size_t *n);

/* Commit and rebase: jobs over two files, the overlay (TOP) and OTHER -
 * the backing file a commit writes into, the new backing file a rebase
 * compares with. Each batch is one file's: q2w_job_batch says which. A
 * TOP batch's BACKING_READ ops read the overlay's backing file as always
 * (for a rebase: the old one); an OTHER batch of a qcow2 file may read
 * its backing file the same way. A raw OTHER file gets READ, WRITE and
 * FLUSH ops of its own. A rebase given the old backing file's handle
 * (qcow2) maps it (OLD batches: reads of that file) to skip what reads
 * as zeros in both files. */
enum q2w_job_file { Q2W_JOB_TOP = 0, Q2W_JOB_OTHER = 1, Q2W_JOB_OLD = 2 };
/* What OTHER is. */
enum q2w_backing_kind {
    Q2W_BACKING_NONE = 0,   /* rebase onto nothing: flatten */
    Q2W_BACKING_RAW = 1,    /* a raw file, served by OTHER ops */
    Q2W_BACKING_QCOW2 = 2   /* a qcow2 image open as its own q2w_image */
};
#define Q2W_COMMIT_KEEP 1u  /* commit -d: the overlay is left as it is */

typedef struct q2w_job {  /* do not rely on its contents but `file` */
    int file;  /* the file of the pending batch, or of the operation that
                  failed (enum q2w_job_file) */
    int kind, phase, other_kind, waiting, other_written;
    unsigned flags;
    q2w_image *top, *other, *old;
    unsigned char *buf;
    size_t chunk;
    uint64_t size, other_size, pos, n, sub;
    q2w_extent ext, ext2;
    int new_zero;     /* the new backing file reads zeros over the chunk */
    int old_zero;     /* ... and the old one (mapped through `old`) */
    q2w_op ops[1];
    size_t n_ops;
    const char *name, *fmt;
    q2w_error_info err;
} q2w_job;

Q2WDEF int q2w_commit(q2w_job *job, q2w_image *top, int base_kind,
                      q2w_image *base, uint64_t raw_base_size, unsigned flags,
                      void *buf, size_t buf_len);
Q2WDEF int q2w_rebase(q2w_job *job, q2w_image *top, q2w_image *old_backing, int new_kind,
                      q2w_image *new_backing, uint64_t raw_size, const char *name,
                      const char *fmt, void *buf, size_t buf_len);
Q2WDEF const q2w_op *q2w_job_batch(const q2w_job *job, size_t *n, int *file);
Q2WDEF int q2w_job_resume(q2w_job *job, int io_rc);
Q2WDEF void q2w_job_progress(const q2w_job *job, uint64_t *done, uint64_t *total);
Q2WDEF const q2w_error_info *q2w_job_error(const q2w_job *job);
Q2WDEF void q2w_info_get(const q2w_image *img, q2w_info *info);
Q2WDEF const q2w_error_info *q2w_error(const q2w_image *img);
Q2WDEF const char *q2w_strerror(int code);
Q2WDEF int q2w_check_work_size(const q2w_io *io, size_t *bytes,
                                q2w_error_info *err);
Q2WDEF int q2w_check(const q2w_io *io, void *work, size_t work_len,
                     unsigned flags, q2w_check_result *res);
/* q2w_check with Q2W_CHECK_REPAIR_LEAKS: leaked refcounts lowered to the
 * references found (then flushed); res->leaks_fixed says how many. When
 * nothing but leaks was found, COPIED flags the lowered refcounts made
 * wrong are set right too (res->copied_fixed), as qemu-img check -r leaks
 * does: a crash between a snapshot delete's header switch and its refcount
 * drops leaves exactly that. */
Q2WDEF int q2w_repair_leaks(const q2w_io *io, void *work, size_t work_len,
                            q2w_check_result *res);
Q2WDEF const char *q2w_finding_name(int kind);

/* Raw deflate (RFC 1951) of len bytes into out (cap bytes), as qemu
 * compresses a cluster: back-references at most 4096 bytes back (qemu
 * inflates with a 4 KiB window), each block stored, fixed-coded or with
 * its own codes, whichever is shortest. work: Q2W_DEFLATE_WORK bytes of
 * the caller's, any alignment. Returns the bytes written, or 0 when the
 * stream would not fit in cap (or len is 0 or over 2 GiB, or a pointer is
 * NULL). A cap of Q2W_DEFLATE_BOUND(len) always fits a stream (at worst
 * the bytes as stored blocks: 5 bytes of header each 65535). */
#define Q2W_DEFLATE_WORK (((size_t)1 << 15) * 4 + 4096 * 4 + 16384 * 4 + 8)
#define Q2W_DEFLATE_BOUND(n) ((size_t)(n) + 5 * ((size_t)(n) / 65535 + 1) + 1)
Q2WDEF size_t q2w_deflate(const void *in, size_t len, void *out, size_t cap, void *work);

#ifndef Q2W_NO_STDIO
/* The backing file for q2w_posix_exec: read(user, off, dst, len) fills dst
 * with len bytes at virtual offset off, 0 or a negative errno. Without a
 * reader (backing NULL, or read NULL) backing reads give zeros. */
typedef struct q2w_backing_reader {
    int (*read)(void *user, uint64_t off, void *dst, size_t len);
    void *user;
} q2w_backing_reader;
typedef struct q2w_fdbox { int fd; } q2w_fdbox;
/* Q2W_POSIX_NO_FLUSH: flush ops are skipped (a bulk import that will fsync
 * once at the end, as qemu-img convert does by default; the crash order
 * is then not kept). */
#define Q2W_POSIX_NO_FLUSH 1u
Q2WDEF int q2w_posix_exec(q2w_image *img, int fd,
                          const q2w_backing_reader *backing, unsigned flags);
Q2WDEF int q2w_posix_run(q2w_image *img, int fd,
                         const q2w_backing_reader *backing, int rc);
Q2WDEF int q2w_posix_run_flags(q2w_image *img, int fd,
                               const q2w_backing_reader *backing,
                               unsigned flags, int rc);
/* A commit or rebase job to its end: each batch on files[its file]
 * (Q2W_JOB_TOP, _OTHER, _OLD: descriptor and backing reader; an unused
 * file's entry is not read). progress, when not NULL, is called after
 * each batch. */
typedef struct q2w_job_fd {
    int fd;                               /* the file's descriptor */
    const q2w_backing_reader *backing;    /* its backing file, or NULL */
} q2w_job_fd;
Q2WDEF int q2w_posix_job_run(q2w_job *job, const q2w_job_fd files[3],
                             void (*progress)(void *user, uint64_t done, uint64_t total),
                             void *user, int rc);
/* pread / pwrite of the whole range, retrying short transfers and EINTR;
 * reads past the end of the file give zeros, src == NULL writes zeros.
 * 0 or -errno. */
Q2WDEF int q2w_pread_full(int fd, uint64_t off, void *dst, size_t len);
Q2WDEF int q2w_pwrite_full(int fd, uint64_t off, const void *src, size_t len);
Q2WDEF void q2w_posix_io(q2w_io *io, int fd, q2w_fdbox *box);
#endif

#ifdef __cplusplus
}
#endif
#endif /* QCOW2W_H */

#if defined(ALK_IMPLEMENTATION) && !defined(QCOW2W_IMPLEMENTATION)
#define QCOW2W_IMPLEMENTATION
#endif

#if defined(QCOW2W_IMPLEMENTATION) && !defined(QCOW2W_IMPLEMENTATION_DONE)
#define QCOW2W_IMPLEMENTATION_DONE

#include <string.h>
#ifndef QCOW2W_ASSERT
#include <assert.h>
#define QCOW2W_ASSERT(c) assert(c)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- constants ------------------------------------------------------------ */
#define Q2W__OFF_MASK 0x00fffffffffffe00ull /* bits 9..55 */
#define Q2W__COPIED (1ull << 63)
#define Q2W__COMPRESSED (1ull << 62)
#define Q2W__ZERO 1ull
#define Q2W__L1_RESERVED (~(Q2W__OFF_MASK | Q2W__COPIED))
#define Q2W__L2_RESERVED                                                       \
    (~(Q2W__OFF_MASK | Q2W__COPIED | Q2W__COMPRESSED | Q2W__ZERO))
#define Q2W__RT_RESERVED 0x1ffull

#define Q2W__INCOMPAT_DIRTY 1ull
#define Q2W__INCOMPAT_CORRUPT 2ull
#define Q2W__INCOMPAT_DATA_FILE 4ull
#define Q2W__INCOMPAT_COMPRESSION 8ull
#define Q2W__INCOMPAT_EXTL2 16ull
#define Q2W__EXT_BACKING_FMT 0xe2792acau
#define Q2W__EXT_FEATURES 0x6803f857u
#define Q2W__EXT_CRYPTO 0x0537be77u
#define Q2W__EXT_DATA_FILE 0x44415441u
#define Q2W__EXT_BITMAPS 0x23852875u
#define Q2W__AUTOCLEAR_BITMAPS 1ull
#define Q2W__AUTOCLEAR_KNOWN 3ull   /* bitmaps, raw external data */
#define Q2W__COMPAT_KNOWN 1ull      /* lazy refcounts */

/* cached cluster kinds; SL1: a snapshot's L1 (read only) */
enum { Q2W__K_RB = 1, Q2W__K_RT, Q2W__K_L2, Q2W__K_L1, Q2W__K_SL1 };
enum { Q2W__S_EMPTY = 0, Q2W__S_LOADING, Q2W__S_VALID };
enum {
    Q2W__OP_NONE = 0, Q2W__OP_OPEN, Q2W__OP_READ, Q2W__OP_WRITE,
    Q2W__OP_ZEROES, Q2W__OP_DISCARD, Q2W__OP_FLUSH, Q2W__OP_RESIZE,
    Q2W__OP_CLOSE, Q2W__OP_SNAP_GET, Q2W__OP_SNAP_CREATE, Q2W__OP_SNAP_DELETE,
    Q2W__OP_SNAP_READ, Q2W__OP_MAP, Q2W__OP_SNAP_MAP, Q2W__OP_EMPTY,
    Q2W__OP_SET_BACKING, Q2W__OP_WRITE_CZ, Q2W__OP_SNAP_APPLY, Q2W__OP_AMEND
};
enum { Q2W__SUB_NONE = 0, Q2W__SUB_GROW_RT };
/* Internal step results besides Q2W_OK / Q2W_PENDING / errors. */
#define Q2W__AGAIN 2
#define Q2W__DONE 3

/* ---- big-endian helpers ---------------------------------------------------- */
static uint64_t q2w__be64(const unsigned char *p)
{
    return ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) |
           ((uint64_t)p[2] << 40) | ((uint64_t)p[3] << 32) |
           ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) |
           ((uint64_t)p[6] << 8) | (uint64_t)p[7];
}
static uint32_t q2w__be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static uint16_t q2w__be16(const unsigned char *p)
{
    return (uint16_t)(((unsigned)p[0] << 8) | (unsigned)p[1]);
}
static void q2w__put64(unsigned char *p, uint64_t v)
{
    int i;
    for (i = 7; i >= 0; i--) { p[i] = (unsigned char)(v & 0xff); v >>= 8; }
}
static void q2w__put32(unsigned char *p, uint32_t v)
{
    int i;
    for (i = 3; i >= 0; i--) { p[i] = (unsigned char)(v & 0xff); v >>= 8; }
}
static void q2w__put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)(v & 0xff);
}

/* Refcount entry i of a block, for refcount_order 0..6. */
static uint64_t q2w__rc_get(const unsigned char *blk, uint64_t i,
                            uint32_t order)
{
    if (order < 3) {
        uint32_t bits = 1u << order;
        uint64_t byte = (i << order) >> 3;
        uint32_t shift = (uint32_t)((i << order) & 7u);
        return (uint64_t)((blk[byte] >> shift) & ((1u << bits) - 1u));
    }
    switch (order) {
    case 3: return blk[i];
    case 4: return q2w__be16(blk + i * 2);
    case 5: return q2w__be32(blk + i * 4);
    default: return q2w__be64(blk + i * 8);
    }
}
static void q2w__rc_set(unsigned char *blk, uint64_t i, uint32_t order,
                        uint64_t v)
{
    if (order < 3) {
        uint32_t bits = 1u << order;
        uint64_t byte = (i << order) >> 3;
        uint32_t shift = (uint32_t)((i << order) & 7u);
        unsigned mask = ((1u << bits) - 1u) << shift;
        blk[byte] = (unsigned char)((blk[byte] & ~mask) |
                                    (((unsigned)v << shift) & mask));
        return;
    }
    switch (order) {
    case 3: blk[i] = (unsigned char)v; break;
    case 4: q2w__put16(blk + i * 2, (uint16_t)v); break;
    case 5: q2w__put32(blk + i * 4, (uint32_t)v); break;
    default: q2w__put64(blk + i * 8, v); break;
    }
}
static uint64_t q2w__rc_max(uint32_t order)
{
    return order >= 6 ? ~0ull : (1ull << (1u << order)) - 1u;
}

static int q2w__fail(q2w_image *img, int code, const char *what,
                     uint64_t offset, uint64_t index)
{
    img->err.code = code;
    img->err.what = what;
    img->err.offset = offset;
    img->err.index = index;
    img->err.needed = 0;
    return code;
}

Q2WDEF const char *q2w_strerror(int code)
{
    switch (code) {
#define Q2W__CASE(name, value, text) case name: return text;
        Q2W_RESULT_LIST(Q2W__CASE)
#undef Q2W__CASE
    default:
        return "unknown qcow2w result code";
    }
}

/* ---- header validation (shared by open and the checker) ------------------- */
typedef struct q2w__hdr {
    int version;
    uint32_t cluster_bits, refcount_order, header_length, compression_type;
    uint64_t size, l1_offset, rt_offset, snapshots_offset;
    uint32_t l1_size, rt_clusters, nb_snapshots;
    uint64_t incompatible, compatible, autoclear;
    uint64_t backing_offset;
    uint32_t backing_len;
    const unsigned char *backing_fmt;
    uint32_t backing_fmt_len;
    /* bitmaps extension (bm_ext_pos 0: none); its fields as stored */
    uint64_t bm_ext_pos, bm_dir_size, bm_dir_offset;
    uint32_t bm_ext_len, bm_nb, bm_reserved;
    /* extensions of a type qcow2w does not know: how many, the first */
    uint32_t n_unknown_ext, unknown_ext_type;
    uint64_t unknown_ext_pos;
} q2w__hdr;

static int q2w__hfail(q2w_error_info *e, int code, const char *what,
                      uint64_t offset, uint64_t value)
{
    e->code = code;
    e->what = what;
    e->offset = offset;
    e->index = 0;
    e->needed = value;
    return code;
}

/* Fixed fields only: the first 104 bytes (72 for v2) are enough. */
/* The version 3 fields of the fixed header (v2: their defaults). */
static int q2w__parse_v3_fields(const unsigned char *p, size_t len,
                                q2w__hdr *h, q2w_error_info *e, uint64_t cs)
{
    if (h->version != 3) {
        h->refcount_order = 4;
        h->header_length = 72;
        return Q2W_OK;
    }
    if (len < 104)
        return q2w__hfail(e, Q2W_ERR_HEADER, "header", 0, len);
    h->incompatible = q2w__be64(p + 72);
    h->compatible = q2w__be64(p + 80);
    h->autoclear = q2w__be64(p + 88);
    h->refcount_order = q2w__be32(p + 96);
    h->header_length = q2w__be32(p + 100);
    if (h->header_length < 104 || (h->header_length & 7u) ||
        h->header_length > cs)
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.header_length", 100,
                          h->header_length);
    if (h->refcount_order > 6)
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.refcount_order", 96,
                          h->refcount_order);
    return Q2W_OK;
}

/* Encryption, incompatible features and the compression type. */
static int q2w__check_features(const unsigned char *p, size_t len,
                               q2w__hdr *h, q2w_error_info *e)
{
    if (q2w__be32(p + 32) != 0)
        return q2w__hfail(e, Q2W_ERR_FEATURE, "header.crypt_method", 32,
                          q2w__be32(p + 32));
    if (h->incompatible & ~0x1full)
        return q2w__hfail(e, Q2W_ERR_FEATURE, "header.incompatible_features",
                          72, h->incompatible);
    if (h->incompatible & Q2W__INCOMPAT_DATA_FILE)
        return q2w__hfail(e, Q2W_ERR_FEATURE, "external data file", 72,
                          h->incompatible);
    if (h->incompatible & Q2W__INCOMPAT_EXTL2)
        return q2w__hfail(e, Q2W_ERR_FEATURE, "extended L2 entries", 72,
                          h->incompatible);
    if (h->version == 3) {
        unsigned ct = h->header_length > 104 ? p[104] : 0u;
        if (h->header_length > 104 && len < 105)
            return q2w__hfail(e, Q2W_ERR_HEADER, "header", 0, len);
        if ((ct != 0) != ((h->incompatible & Q2W__INCOMPAT_COMPRESSION) != 0))
            return q2w__hfail(e, Q2W_ERR_HEADER, "header.compression_type",
                              104, ct);
        if (ct > 1)
            return q2w__hfail(e, Q2W_ERR_FEATURE, "header.compression_type",
                              104, ct);
        h->compression_type = ct;
    }
    return Q2W_OK;
}

/* The size, the L1 table, the refcount table and the snapshot table. */
static int q2w__check_tables(const q2w__hdr *h, q2w_error_info *e,
                             uint64_t cs)
{
    uint64_t l2_entries, need_l1;
    if (h->size > (1ull << 62))
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.size", 24, h->size);
    l2_entries = cs / 8;
    need_l1 = (h->size + cs * l2_entries - 1) / (cs * l2_entries);
    if ((uint64_t)h->l1_size * 8 > Q2W_MAX_L1_BYTES)
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.l1_size", 36, h->l1_size);
    if (h->l1_size < need_l1)
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.l1_size", 36, h->l1_size);
    if ((h->l1_offset & (cs - 1)) || h->l1_offset >= Q2W_MAX_HOST_OFFSET ||
        (h->l1_size && !h->l1_offset))
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.l1_table_offset", 40,
                          h->l1_offset);
    if (h->rt_clusters == 0 ||
        (uint64_t)h->rt_clusters * cs > Q2W_MAX_REFTABLE_BYTES)
        return q2w__hfail(e, Q2W_ERR_HEADER,
                          "header.refcount_table_clusters", 56,
                          h->rt_clusters);
    if (!h->rt_offset || (h->rt_offset & (cs - 1)) ||
        h->rt_offset >= Q2W_MAX_HOST_OFFSET)
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.refcount_table_offset",
                          48, h->rt_offset);
    if (h->nb_snapshots > 65536)
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.nb_snapshots", 60,
                          h->nb_snapshots);
    if (h->nb_snapshots &&
        (!h->snapshots_offset || (h->snapshots_offset & (cs - 1)) ||
         h->snapshots_offset >= Q2W_MAX_HOST_OFFSET))
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.snapshots_offset", 64,
                          h->snapshots_offset);
    return Q2W_OK;
}

/* The backing file name: inside cluster 0, after the header. */
static int q2w__check_backing_name(const q2w__hdr *h, q2w_error_info *e,
                                   uint64_t cs)
{
    if (!h->backing_offset) return Q2W_OK;
    if (h->backing_len > Q2W_MAX_BACKING_NAME || h->backing_len == 0)
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.backing_file_size",
                          16, h->backing_len);
    if (h->backing_offset > cs || h->backing_len > cs - h->backing_offset)
        return q2w__hfail(e, Q2W_ERR_HEADER,
                          "header.backing_file_offset", 8,
                          h->backing_offset);
    if (h->backing_offset < h->header_length)
        return q2w__hfail(e, Q2W_ERR_HEADER,
                          "header.backing_file_offset", 8,
                          h->backing_offset);
    return Q2W_OK;
}

static int q2w__parse_fixed(const unsigned char *p, size_t len, q2w__hdr *h,
                            q2w_error_info *e)
{
    uint64_t cs;
    int rc;
    memset(h, 0, sizeof *h);
    if (len < 72)
        return q2w__hfail(e, Q2W_ERR_MAGIC, "header", 0, len);
    if (q2w__be32(p) != 0x514649fbu)
        return q2w__hfail(e, Q2W_ERR_MAGIC, "header.magic", 0, q2w__be32(p));
    h->version = (int)q2w__be32(p + 4);
    if (h->version != 2 && h->version != 3)
        return q2w__hfail(e, Q2W_ERR_VERSION, "header.version", 4,
                          q2w__be32(p + 4));
    h->backing_offset = q2w__be64(p + 8);
    h->backing_len = q2w__be32(p + 16);
    h->cluster_bits = q2w__be32(p + 20);
    h->size = q2w__be64(p + 24);
    h->l1_size = q2w__be32(p + 36);
    h->l1_offset = q2w__be64(p + 40);
    h->rt_offset = q2w__be64(p + 48);
    h->rt_clusters = q2w__be32(p + 56);
    h->nb_snapshots = q2w__be32(p + 60);
    h->snapshots_offset = q2w__be64(p + 64);
    if (h->cluster_bits < Q2W_MIN_CLUSTER_BITS ||
        h->cluster_bits > Q2W_MAX_CLUSTER_BITS)
        return q2w__hfail(e, Q2W_ERR_HEADER, "header.cluster_bits", 20,
                          h->cluster_bits);
    cs = 1ull << h->cluster_bits;
    if ((rc = q2w__parse_v3_fields(p, len, h, e, cs)) != Q2W_OK) return rc;
    if ((rc = q2w__check_features(p, len, h, e)) != Q2W_OK) return rc;
    if ((rc = q2w__check_tables(h, e, cs)) != Q2W_OK) return rc;
    return q2w__check_backing_name(h, e, cs);
}

/* Extensions: from header_length to the backing name (or the cluster end);
 * `p` holds at least that much. */
static int q2w__parse_exts(const unsigned char *p, size_t len, q2w__hdr *h,
                           q2w_error_info *e)
{
    uint64_t pos = h->header_length;
    uint64_t end = h->backing_offset ? h->backing_offset : len;
    if (end > len) end = len;
    while (pos + 8 <= end) {
        uint32_t type = q2w__be32(p + pos), elen = q2w__be32(p + pos + 4);
        uint64_t padded = ((uint64_t)elen + 7u) & ~7ull;
        if (type == 0)
            return Q2W_OK;
        if (padded > end - pos - 8)
            return q2w__hfail(e, Q2W_ERR_HEADER, "header extension length",
                              pos + 4, elen);
        switch (type) {
        case Q2W__EXT_BACKING_FMT:
            if (elen > Q2W_MAX_BACKING_FMT)
                return q2w__hfail(e, Q2W_ERR_HEADER,
                                  "backing format extension", pos + 4, elen);
            h->backing_fmt = p + pos + 8;
            h->backing_fmt_len = elen;
            break;
        case Q2W__EXT_CRYPTO:
            return q2w__hfail(e, Q2W_ERR_FEATURE, "encryption extension", pos,
                              type);
        case Q2W__EXT_DATA_FILE:
            return q2w__hfail(e, Q2W_ERR_FEATURE, "data file extension", pos,
                              type);
        case Q2W__EXT_BITMAPS:
            /* Kept up to date by qemu only while autoclear bit 0 is set;
             * qcow2w clears it with the others at the first change. The
             * checker counts the clusters they hold. */
            h->bm_ext_pos = pos;
            h->bm_ext_len = elen;
            if (elen >= 24) {
                h->bm_nb = q2w__be32(p + pos + 8);
                h->bm_reserved = q2w__be32(p + pos + 12);
                h->bm_dir_size = q2w__be64(p + pos + 16);
                h->bm_dir_offset = q2w__be64(p + pos + 24);
            }
            break;
        case Q2W__EXT_FEATURES:
            break;
        default:
            /* unknown: preserved by never rewriting; the checker will not
             * free clusters while one is there (it may hold some) */
            if (!h->n_unknown_ext++) {
                h->unknown_ext_pos = pos;
                h->unknown_ext_type = type;
            }
            break;
        }
        pos += 8 + padded;
    }
    /* Cluster 0 ended without an end marker: qemu accepts that too. */
    return Q2W_OK;
}

/* ---- op emission ---------------------------------------------------------- */
static size_t q2w__room(const q2w_image *img)
{
    return img->ops_cap - img->n_ops;
}

static void q2w__emit(q2w_image *img, int kind, uint64_t off, size_t len,
                      unsigned char *dst, const unsigned char *src)
{
    q2w_op *last = img->n_ops ? &img->ops[img->n_ops - 1] : NULL;
    QCOW2W_ASSERT(img->n_ops < img->ops_cap);
    if (kind == Q2W_OP_WRITE) {
        img->writes_since_flush = 1;
        if (off + len > img->file_end) img->file_end = off + len;
    }
    /* Adjacent pieces of one transfer become one op. */
    if (last && last->kind == kind && kind != Q2W_OP_FLUSH &&
        last->off + last->len == off &&
        ((kind == Q2W_OP_WRITE && ((!src && !last->src) ||
                                   (src && last->src &&
                                    last->src + last->len == src))) ||
         (kind != Q2W_OP_WRITE && last->dst + last->len == dst))) {
        last->len += len;
        return;
    }
    if (kind == Q2W_OP_FLUSH) img->writes_since_flush = 0;
    img->ops[img->n_ops].kind = kind;
    img->ops[img->n_ops].off = off;
    img->ops[img->n_ops].len = len;
    img->ops[img->n_ops].dst = dst;
    img->ops[img->n_ops].src = src;
    img->n_ops++;
}

/* Pending if there is a batch to run first, else the buffer is too small. */
static int q2w__need_room(q2w_image *img, size_t n)
{
    if (q2w__room(img) >= n) return Q2W_OK;
    QCOW2W_ASSERT(img->n_ops > 0);
    return Q2W_PENDING;
}

/* The header switch that makes new metadata live: what came before is
 * flushed, then one write of `len` bytes at header offset `off`, then a
 * flush. Q2W_OK when planned (the caller returns Q2W_PENDING: the switch
 * counts once the batch ran), Q2W_PENDING when the batch must run first. */
static int q2w__switch_header(q2w_image *img, uint64_t off,
                              const unsigned char *fields, size_t len)
{
    int rc = q2w__need_room(img, 3);
    if (rc != Q2W_OK) return rc;
    memcpy(img->hdrbuf, fields, len);
    if (img->writes_since_flush) q2w__emit(img, Q2W_OP_FLUSH, 0, 0, NULL, NULL);
    q2w__emit(img, Q2W_OP_WRITE, off, len, NULL, img->hdrbuf);
    q2w__emit(img, Q2W_OP_FLUSH, 0, 0, NULL, NULL);
    return Q2W_OK;
}

/* ---- metadata cache -------------------------------------------------------- */
static unsigned char *q2w__slot_data(const q2w_image *img, size_t i)
{
    return img->slot_mem + i * (size_t)img->cluster_size;
}

static long q2w__find(const q2w_image *img, uint64_t key)
{
    size_t i;
    for (i = 0; i < img->n_slots; i++)
        if (img->slots[i].state != Q2W__S_EMPTY && img->slots[i].key == key)
            return (long)i;
    return -1;
}

static int q2w__checkpoint_start(q2w_image *img);

/* A slot that may be reused now: empty, or clean and unpinned; least
 * recently used first. If only dirty ones are left a checkpoint starts. */
static int q2w__victim(q2w_image *img, size_t *out)
{
    size_t i, best = (size_t)-1;
    int dirty_candidates = 0;
    for (i = 0; i < img->n_slots; i++) {
        q2w__slot *s = &img->slots[i];
        if (s->state == Q2W__S_EMPTY) { *out = i; return Q2W_OK; }
        if (s->pin == img->pin_epoch || s->state == Q2W__S_LOADING) continue;
        if (s->dirty) { dirty_candidates = 1; continue; }
        if (best == (size_t)-1 || s->lru < img->slots[best].lru) best = i;
    }
    if (best != (size_t)-1) { *out = best; return Q2W_OK; }
    QCOW2W_ASSERT(dirty_candidates); /* Q2W_MIN_SLOTS covers every step */
    if (!dirty_candidates)
        return q2w__fail(img, Q2W_ERR_NOMEM, "cache", 0, 0);
    return q2w__checkpoint_start(img);
}

/* The cached cluster at `key` of `kind`: loaded (read planned, Q2W_PENDING)
 * when absent, or created zeroed and dirty when `fresh`. Pinned for the
 * rest of the step. */
static int q2w__get(q2w_image *img, int kind, uint64_t key, int fresh,
                    unsigned char **out)
{
    long f = q2w__find(img, key);
    size_t i;
    int rc;
    if (f >= 0) {
        q2w__slot *s = &img->slots[f];
        if (s->kind != kind)
            return q2w__fail(img, Q2W_ERR_METADATA,
                             "table overlaps another table", key, 0);
        QCOW2W_ASSERT(s->state == Q2W__S_VALID && !fresh);
        s->pin = img->pin_epoch;
        s->lru = ++img->lru_clock;
        *out = q2w__slot_data(img, (size_t)f);
        return Q2W_OK;
    }
    rc = q2w__victim(img, &i);
    if (rc != Q2W_OK) return rc;
    if (!fresh && (rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
    img->slots[i].key = key;
    img->slots[i].kind = (uint8_t)kind;
    img->slots[i].pin = img->pin_epoch;
    img->slots[i].lru = ++img->lru_clock;
    if (fresh) {
        /* A cluster placed now (refcount block, L2 table, refcount-table
         * piece) is written whole by a later checkpoint: the planned end
         * of the file covers it from now on, as q2w_info promises. */
        if (key + img->cluster_size > img->file_end)
            img->file_end = key + img->cluster_size;
        memset(q2w__slot_data(img, i), 0, (size_t)img->cluster_size);
        img->slots[i].state = Q2W__S_VALID;
        img->slots[i].dirty = 1;
        *out = q2w__slot_data(img, i);
        return Q2W_OK;
    }
    img->slots[i].state = Q2W__S_LOADING;
    img->slots[i].dirty = 0;
    q2w__emit(img, Q2W_OP_READ, key, (size_t)img->cluster_size,
              q2w__slot_data(img, i), NULL);
    return Q2W_PENDING;
}

/* A slot can be taken by a fresh cluster without a checkpoint. */
static int q2w__reserve(q2w_image *img)
{
    size_t i;
    return q2w__victim(img, &i);
}

static void q2w__mark_dirty(q2w_image *img, const unsigned char *data)
{
    size_t i = (size_t)(data - img->slot_mem) / (size_t)img->cluster_size;
    QCOW2W_ASSERT(i < img->n_slots);
    img->slots[i].dirty = 1;
}

static void q2w__unpin(q2w_image *img, const unsigned char *data)
{
    size_t i = (size_t)(data - img->slot_mem) / (size_t)img->cluster_size;
    QCOW2W_ASSERT(i < img->n_slots);
    img->slots[i].pin = 0;
}

static void q2w__drop(q2w_image *img, uint64_t key)
{
    long f = q2w__find(img, key);
    if (f >= 0) {
        QCOW2W_ASSERT(!img->slots[f].dirty);
        img->slots[f].state = Q2W__S_EMPTY;
    }
}

/* ---- checkpoint: dirty metadata written back in crash-safe order ---------- */
/* img->ckpt_phase. The write and flush phases run in this order, one after
 * the other (q2w__checkpoint_run counts through them). */
enum {
    Q2W__CKPT_IDLE,                  /* no checkpoint in progress */
    Q2W__CKPT_REFCOUNT_BLOCKS,
    Q2W__CKPT_FLUSH_REFCOUNT_BLOCKS,
    Q2W__CKPT_REFCOUNT_TABLE,        /* its cached pieces */
    Q2W__CKPT_FLUSH_REFCOUNT_TABLE,
    Q2W__CKPT_L2_TABLES,
    Q2W__CKPT_FLUSH_L2_TABLES,
    Q2W__CKPT_L1_TABLE,              /* its cached pieces */
    Q2W__CKPT_FLUSH_L1_TABLE,
    Q2W__CKPT_PLANNED,               /* every write and flush planned */
    Q2W__CKPT_WAITING                /* the batch handed out: done next call */
};

/* The kind of cache slot a write phase writes back; 0 for a flush phase. */
static int q2w__ckpt_kind(int phase)
{
    switch (phase) {
    case Q2W__CKPT_REFCOUNT_BLOCKS:
        return Q2W__K_RB;
    case Q2W__CKPT_REFCOUNT_TABLE: return Q2W__K_RT;
    case Q2W__CKPT_L2_TABLES:
        return Q2W__K_L2;
    case Q2W__CKPT_L1_TABLE: return Q2W__K_L1;
    default: return 0;
    }
}

static int q2w__checkpoint_start(q2w_image *img)
{
    QCOW2W_ASSERT(img->ckpt_phase == Q2W__CKPT_IDLE);
    img->ckpt_phase = Q2W__CKPT_REFCOUNT_BLOCKS;
    img->ckpt_boundary = img->n_frees;
    return Q2W__AGAIN;
}

static size_t q2w__slot_write_len(const q2w_image *img, const q2w__slot *s)
{
    /* The last L1 cluster is written only up to the table's end. */
    if (s->kind == Q2W__K_L1) {
        uint64_t end = img->l1_offset + (uint64_t)img->l1_size * 8;
        if (s->key + img->cluster_size > end)
            return (size_t)(end - s->key);
    }
    return (size_t)img->cluster_size;
}

static int q2w__checkpoint_run(q2w_image *img)
{
    while (img->ckpt_phase >= Q2W__CKPT_REFCOUNT_BLOCKS &&
           img->ckpt_phase <= Q2W__CKPT_FLUSH_L1_TABLE) {
        int kind = q2w__ckpt_kind(img->ckpt_phase);
        if (kind) {
            size_t i;
            for (i = 0; i < img->n_slots; i++) {
                q2w__slot *s = &img->slots[i];
                if (s->state != Q2W__S_VALID || !s->dirty || s->kind != kind)
                    continue;
                if (q2w__room(img) < 1) return Q2W_PENDING;
                q2w__emit(img, Q2W_OP_WRITE, s->key, q2w__slot_write_len(img, s),
                          NULL, q2w__slot_data(img, i));
                s->dirty = 0;
            }
        } else if (img->writes_since_flush) {
            if (q2w__room(img) < 1) return Q2W_PENDING;
            q2w__emit(img, Q2W_OP_FLUSH, 0, 0, NULL, NULL);
        }
        img->ckpt_phase++;
    }
    if (img->ckpt_phase == Q2W__CKPT_PLANNED) {
        img->ckpt_phase = Q2W__CKPT_WAITING;
        if (img->n_ops) return Q2W_PENDING;
    }
    /* Executed: the references dropped before the start are durable. */
    img->ckpt_phase = Q2W__CKPT_IDLE;
    img->n_safe_frees = img->ckpt_boundary;
    return Q2W_OK;
}

/* ---- table lookups --------------------------------------------------------- */
static uint64_t q2w__epb_bits(const q2w_image *img)
{
    return img->cluster_bits + 3u - img->refcount_order;
}

/* Pointer to the 8-byte refcount-table entry `k`, loading its piece. */
static int q2w__rt_entry(q2w_image *img, uint64_t k, unsigned char **p)
{
    uint64_t byte = k * 8, piece = byte & ~(img->cluster_size - 1);
    unsigned char *d;
    int rc = q2w__get(img, Q2W__K_RT, img->rt_offset + piece, 0, &d);
    if (rc != Q2W_OK) return rc;
    *p = d + (byte - piece);
    return Q2W_OK;
}

static int q2w__l1_entry(q2w_image *img, uint64_t i, unsigned char **p)
{
    uint64_t byte = i * 8, piece = byte & ~(img->cluster_size - 1);
    unsigned char *d;
    int rc = q2w__get(img, Q2W__K_L1, img->l1_offset + piece, 0, &d);
    if (rc != Q2W_OK) return rc;
    *p = d + (byte - piece);
    return Q2W_OK;
}

/* The refcount block covering cluster c (NULL block when none exists). */
static int q2w__rb_for(q2w_image *img, uint64_t c, unsigned char **blk,
                       unsigned char **rte)
{
    uint64_t k = c >> q2w__epb_bits(img), ent, off;
    int rc;
    *blk = NULL;
    if (k >= (uint64_t)img->rt_clusters * (img->cluster_size / 8)) {
        *rte = NULL;
        return Q2W_OK;
    }
    rc = q2w__rt_entry(img, k, rte);
    if (rc != Q2W_OK) return rc;
    ent = q2w__be64(*rte);
    if (ent & Q2W__RT_RESERVED)
        return q2w__fail(img, Q2W_ERR_METADATA, "refcount_table",
                         img->rt_offset + k * 8, k);
    off = ent;
    if (!off) return Q2W_OK;
    if (off >= Q2W_MAX_HOST_OFFSET || (off & (img->cluster_size - 1)))
        return q2w__fail(img, Q2W_ERR_METADATA, "refcount_table",
                         img->rt_offset + k * 8, k);
    return q2w__get(img, Q2W__K_RB, off, 0, blk);
}

static int q2w__refcount(q2w_image *img, uint64_t c, uint64_t *v)
{
    unsigned char *blk, *rte;
    int rc = q2w__rb_for(img, c, &blk, &rte);
    if (rc != Q2W_OK) return rc;
    *v = blk ? q2w__rc_get(blk, c & ((1ull << q2w__epb_bits(img)) - 1),
                           img->refcount_order)
             : 0;
    return Q2W_OK;
}

/* ---- allocation ------------------------------------------------------------ */
static int q2w__grow_rt_start(q2w_image *img);

/* First free cluster >= *cursor (moved forward past used clusters). May create a refcount block (Q2W__AGAIN:
 * the step starts over) or start refcount-table growth. On Q2W_OK the
 * block covering *out is pinned, so q2w__take can commit. */
static int q2w__find_free(q2w_image *img, uint64_t *cursor, uint64_t *out)
{
    uint64_t epb_bits = q2w__epb_bits(img), epb = 1ull << epb_bits;
    uint64_t c = *cursor;
    for (;;) {
        unsigned char *blk, *rte;
        uint64_t i;
        int rc;
        if (c >= (Q2W_MAX_HOST_OFFSET >> img->cluster_bits))
            return q2w__fail(img, Q2W_ERR_LIMIT, "host offset", 0, c);
        rc = q2w__rb_for(img, c, &blk, &rte);
        if (rc != Q2W_OK) return rc;
        if (!rte) return q2w__grow_rt_start(img);
        if (!blk) {
            /* A new block on the first free cluster of its range, counting
             * itself; the table entry names it. */
            unsigned char *nb;
            if ((rc = q2w__reserve(img)) != Q2W_OK) return rc;
            rc = q2w__get(img, Q2W__K_RB, c << img->cluster_bits, 1, &nb);
            QCOW2W_ASSERT(rc == Q2W_OK);
            q2w__rc_set(nb, c & (epb - 1), img->refcount_order, 1);
            q2w__put64(rte, c << img->cluster_bits);
            q2w__mark_dirty(img, rte);
            if (c == img->free_hint) img->free_hint = c + 1;
            if (c == *cursor) *cursor = c + 1;
            return Q2W__AGAIN;
        }
        for (i = c & (epb - 1); i < epb; i++, c++)
            if (q2w__rc_get(blk, i, img->refcount_order) == 0) {
                *cursor = c;
                *out = c;
                return Q2W_OK;
            }
        /* Everything before c is in use: the cursor keeps that progress
         * across restarts (a scan longer than the cache would otherwise
         * reload the same blocks forever), and a long scan must not pin
         * every block it passes. */
        *cursor = c;
        q2w__unpin(img, blk);
        q2w__unpin(img, rte);
    }
}

/* Commit cluster c found by q2w__find_free (its block is cached). */
static void q2w__take(q2w_image *img, uint64_t c)
{
    unsigned char *blk, *rte;
    int rc = q2w__rb_for(img, c, &blk, &rte);
    QCOW2W_ASSERT(rc == Q2W_OK && blk);
    (void)rc;
    q2w__rc_set(blk, c & ((1ull << q2w__epb_bits(img)) - 1),
                img->refcount_order, 1);
    q2w__mark_dirty(img, blk);
    if (c >= img->free_hint) img->free_hint = c + 1;
}

/* Queue a dropped reference; its refcount falls after the next checkpoint. */
static int q2w__defer_free(q2w_image *img, uint64_t cluster, uint64_t count)
{
    if (img->n_frees &&
        img->frees[img->n_frees - 1].cluster + img->frees[img->n_frees - 1].count
            == cluster) {
        img->frees[img->n_frees - 1].count += count;
        return Q2W_OK;
    }
    QCOW2W_ASSERT(img->n_frees < img->cap_frees);
    img->frees[img->n_frees].cluster = cluster;
    img->frees[img->n_frees].count = count;
    img->n_frees++;
    return Q2W_OK;
}

/* Lower the refcounts whose reference removal a checkpoint made durable. */
static int q2w__apply_frees(q2w_image *img)
{
    while (img->n_safe_frees) {
        q2w__free *f = &img->frees[0];
        unsigned char *blk, *rte;
        uint64_t v, i;
        int rc;
        img->pin_epoch++;
        rc = q2w__rb_for(img, f->cluster, &blk, &rte);
        if (rc != Q2W_OK) return rc;
        if (!blk)
            return q2w__fail(img, Q2W_ERR_METADATA, "refcount of freed cluster",
                             f->cluster << img->cluster_bits, 0);
        i = f->cluster & ((1ull << q2w__epb_bits(img)) - 1);
        v = q2w__rc_get(blk, i, img->refcount_order);
        if (v == 0)
            return q2w__fail(img, Q2W_ERR_METADATA, "refcount of freed cluster",
                             f->cluster << img->cluster_bits, 0);
        q2w__rc_set(blk, i, img->refcount_order, v - 1);
        q2w__mark_dirty(img, blk);
        if (v == 1 && f->cluster < img->free_hint) img->free_hint = f->cluster;
        f->cluster++;
        if (--f->count == 0) {
            memmove(img->frees, img->frees + 1,
                    (img->n_frees - 1) * sizeof *img->frees);
            img->n_frees--;
            img->n_safe_frees--;
            if (img->ckpt_boundary) img->ckpt_boundary--;
        }
    }
    return Q2W_OK;
}

/* ---- refcount-table growth ------------------------------------------------- */
/* New blocks and a new table go at base, the first cluster past what the
 * old table can describe: `blocks` refcount blocks, then the new table of
 * table_clusters. Block j covers range base/epb + j and counts whatever of
 * [base, base + blocks + table_clusters) lies in it, itself included. */
/* img->grow_phase, in order. */
enum {
    Q2W__GROW_CHECKPOINT,      /* cached metadata written back first */
    Q2W__GROW_ZERO_NEW_TABLE,
    Q2W__GROW_NEW_BLOCKS,      /* new blocks and the pieces naming them */
    Q2W__GROW_COPY_OLD_TABLE,
    Q2W__GROW_SWITCH_HEADER,
    Q2W__GROW_FREE_OLD_TABLE
};

static int q2w__grow_rt_start(q2w_image *img)
{
    uint64_t cs = img->cluster_size, epb_bits = q2w__epb_bits(img);
    uint64_t old_entries = (uint64_t)img->rt_clusters * (cs / 8);
    uint64_t base = old_entries << epb_bits, blocks = 1, table_clusters, i;
    table_clusters = (uint64_t)img->rt_clusters + (img->rt_clusters + 1) / 2;
    for (i = 0; i < 64; i++) {
        uint64_t end = base + blocks + table_clusters;
        uint64_t entries = ((end - 1) >> epb_bits) + 1;
        uint64_t table_needed = (entries * 8 + cs - 1) / cs;
        uint64_t blocks_needed =
            ((end - 1) >> epb_bits) - (base >> epb_bits) + 1;
        if (table_needed < table_clusters) table_needed = table_clusters;
        if (table_needed == table_clusters && blocks_needed == blocks) break;
        table_clusters = table_needed;
        blocks = blocks_needed;
    }
    if (table_clusters * cs > Q2W_MAX_REFTABLE_BYTES)
        return q2w__fail(img, Q2W_ERR_LIMIT, "refcount table size", 0,
                         table_clusters * cs);
    if (((base + blocks + table_clusters) << img->cluster_bits) >=
        Q2W_MAX_HOST_OFFSET)
        return q2w__fail(img, Q2W_ERR_LIMIT, "host offset", 0, base);
    /* The new blocks and the new table pieces holding their entries must
     * fit in the cache next to what the step has pinned. */
    if (blocks + 2 + 4 > img->n_slots)
        return q2w__fail(img, Q2W_ERR_LIMIT,
                         "refcount table growth needs more cache slots", 0,
                         blocks + 6);
    img->sub = Q2W__SUB_GROW_RT;
    img->grow_phase = Q2W__GROW_CHECKPOINT;
    img->grow_base = base;
    img->grow_blocks = blocks;
    img->grow_table_clusters = table_clusters;
    return Q2W__AGAIN;
}

/* The new refcount blocks, as fresh dirty cache slots: block j counts
 * whatever of the new blocks and table lies in its range. */
static int q2w__grow_new_blocks(q2w_image *img)
{
    uint64_t epb_bits = q2w__epb_bits(img), base = img->grow_base;
    uint64_t end = base + img->grow_blocks + img->grow_table_clusters, j;
    int rc;
    for (j = 0; j < img->grow_blocks; j++) {
        unsigned char *nb;
        uint64_t lo = (base >> epb_bits) + j, c;
        if (q2w__find(img, (base + j) << img->cluster_bits) >= 0) continue;
        if ((rc = q2w__reserve(img)) != Q2W_OK) return rc;
        rc = q2w__get(img, Q2W__K_RB, (base + j) << img->cluster_bits, 1,
                      &nb);
        QCOW2W_ASSERT(rc == Q2W_OK);
        for (c = base; c < end; c++)
            if ((c >> epb_bits) == lo)
                q2w__rc_set(nb, c & ((1ull << epb_bits) - 1),
                            img->refcount_order, 1);
    }
    return Q2W_OK;
}

/* The new blocks entered in the pieces of the new table at new_rt that
 * name them, as dirty cache slots. */
static int q2w__grow_enter_blocks(q2w_image *img, uint64_t new_rt)
{
    uint64_t cs = img->cluster_size, epb_bits = q2w__epb_bits(img);
    uint64_t base = img->grow_base, j;
    int rc;
    for (j = 0; j < img->grow_blocks; j++) {
        uint64_t k = (base >> epb_bits) + j, byte = k * 8;
        uint64_t piece = byte & ~(cs - 1);
        unsigned char *d;
        long f = q2w__find(img, new_rt + piece);
        if (f < 0) {
            if ((rc = q2w__reserve(img)) != Q2W_OK) return rc;
            rc = q2w__get(img, Q2W__K_RT, new_rt + piece, 1, &d);
            QCOW2W_ASSERT(rc == Q2W_OK);
        } else {
            d = q2w__slot_data(img, (size_t)f);
            img->slots[f].pin = img->pin_epoch;
        }
        q2w__put64(d + (byte - piece), (base + j) << img->cluster_bits);
        q2w__mark_dirty(img, d);
    }
    return Q2W_OK;
}

/* Switched to the new table at new_rt: the old table's pieces go, its
 * clusters freed. */
static int q2w__grow_free_old_table(q2w_image *img, uint64_t new_rt)
{
    uint64_t cs = img->cluster_size, old = img->rt_offset;
    uint64_t old_clusters = img->rt_clusters, j;
    uint64_t end = (img->grow_base + img->grow_blocks +
                    img->grow_table_clusters) << img->cluster_bits;
    if (img->n_frees >= img->cap_frees) return q2w__checkpoint_start(img);
    for (j = 0; j < old_clusters; j++) q2w__drop(img, old + j * cs);
    img->rt_offset = new_rt;
    img->rt_clusters = (uint32_t)img->grow_table_clusters;
    if (end > img->file_end) img->file_end = end;
    q2w__defer_free(img, old >> img->cluster_bits, old_clusters);
    img->sub = Q2W__SUB_NONE;
    return Q2W__AGAIN;
}

static int q2w__grow_rt_run(q2w_image *img)
{
    uint64_t cs = img->cluster_size;
    uint64_t table_clusters = img->grow_table_clusters;
    uint64_t new_rt = (img->grow_base + img->grow_blocks) << img->cluster_bits;
    uint64_t old_clusters = img->rt_clusters;
    int rc;
    switch (img->grow_phase) {
    case Q2W__GROW_CHECKPOINT:
        /* everything cached is written back first: the copy reads disk */
        img->grow_phase = Q2W__GROW_ZERO_NEW_TABLE;
        return q2w__checkpoint_start(img);
    case Q2W__GROW_ZERO_NEW_TABLE:
        /* the new table starts as zeros on disk, before its pieces */
        if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
        q2w__emit(img, Q2W_OP_WRITE, new_rt, (size_t)(table_clusters * cs),
                  NULL, NULL);
        img->grow_phase = Q2W__GROW_NEW_BLOCKS;
        /* fall through */
    case Q2W__GROW_NEW_BLOCKS:
        /* New blocks and the pieces of the new table that name them, as
         * dirty cache slots; a checkpoint in between only writes them
         * early (they are not referenced yet). */
        img->pin_epoch++;
        if ((rc = q2w__grow_new_blocks(img)) != Q2W_OK) return rc;
        if ((rc = q2w__grow_enter_blocks(img, new_rt)) != Q2W_OK) return rc;
        img->grow_phase = Q2W__GROW_COPY_OLD_TABLE;
        img->grow_copied = 0;
        /* fall through */
    case Q2W__GROW_COPY_OLD_TABLE:
        /* copy the old table, a cluster at a time through scratch */
        while (img->grow_copied < old_clusters) {
            uint64_t at = img->grow_copied * cs;
            if (q2w__room(img) < 2) return Q2W_PENDING;
            q2w__emit(img, Q2W_OP_READ, img->rt_offset + at, (size_t)cs,
                      img->scratch, NULL);
            q2w__emit(img, Q2W_OP_WRITE, new_rt + at, (size_t)cs, NULL,
                      img->scratch);
            img->grow_copied++;
        }
        img->grow_phase = Q2W__GROW_SWITCH_HEADER;
        /* The new blocks and pieces (dirty) go out, flushed. */
        return q2w__checkpoint_start(img);
    case Q2W__GROW_SWITCH_HEADER: {
        unsigned char f[12];
        q2w__put64(f, new_rt);
        q2w__put32(f + 8, (uint32_t)table_clusters);
        if ((rc = q2w__switch_header(img, 48, f, sizeof f)) != Q2W_OK) return rc;
        img->grow_phase = Q2W__GROW_FREE_OLD_TABLE;
        return Q2W_PENDING;
    }
    default: /* Q2W__GROW_FREE_OLD_TABLE */
        return q2w__grow_free_old_table(img, new_rt);
    }
}

/* ---- L1 / L2 resolution ---------------------------------------------------- */
static uint64_t q2w__l2_entries(const q2w_image *img)
{
    return img->cluster_size / 8;
}

/* Does the backing file supply data for virtual cluster vc? */
static int q2w__backed(const q2w_image *img, uint64_t vc)
{
    return img->has_backing && (vc << img->cluster_bits) < img->backing_size;
}

/* Free-list room for one more range, else a checkpoint that empties it. */
static int q2w__free_room(q2w_image *img)
{
    if (img->n_frees < img->cap_frees) return Q2W_OK;
    return q2w__checkpoint_start(img);
}

/* The L2 table of virtual cluster vc. With `create`, an absent table is
 * allocated (refcount, fresh slot, L1 entry with COPIED); without, *l2 is
 * NULL when there is none. *l2off is its host offset. */
static int q2w__l2_for(q2w_image *img, uint64_t vc, int create,
                       unsigned char **l2, uint64_t *l2off)
{
    uint64_t l1i = vc >> (img->cluster_bits - 3), l1e, off;
    unsigned char *l1p;
    int rc = q2w__l1_entry(img, l1i, &l1p);
    if (rc != Q2W_OK) return rc;
    l1e = q2w__be64(l1p);
    *l2 = NULL;
    *l2off = 0;
    if (l1e & Q2W__L1_RESERVED)
        return q2w__fail(img, Q2W_ERR_METADATA, "l1 entry reserved bits",
                         img->l1_offset + l1i * 8, l1i);
    off = l1e & Q2W__OFF_MASK;
    if (!off) {
        uint64_t c;
        if (!create) return Q2W_OK;
        rc = q2w__find_free(img, &img->free_hint, &c);
        if (rc != Q2W_OK) return rc;
        if ((rc = q2w__reserve(img)) != Q2W_OK) return rc;
        q2w__take(img, c);
        rc = q2w__get(img, Q2W__K_L2, c << img->cluster_bits, 1, l2);
        QCOW2W_ASSERT(rc == Q2W_OK);
        q2w__put64(l1p, (c << img->cluster_bits) | Q2W__COPIED);
        q2w__mark_dirty(img, l1p);
        *l2off = c << img->cluster_bits;
        return Q2W_OK;
    }
    if (off & (img->cluster_size - 1))
        return q2w__fail(img, Q2W_ERR_METADATA, "l1 entry unaligned",
                         img->l1_offset + l1i * 8, l1i);
    if (create && !(l1e & Q2W__COPIED)) {
        uint64_t v, c;
        unsigned char *old_l2;
        rc = q2w__refcount(img, off >> img->cluster_bits, &v);
        if (rc != Q2W_OK) return rc;
        if (v == 0)
            return q2w__fail(img, Q2W_ERR_METADATA,
                             "L2 table with refcount 0",
                             img->l1_offset + l1i * 8, l1i);
        if (v == 1) {
            /* refcount 1 without COPIED: the flag was stale; set it. */
            q2w__put64(l1p, l1e | Q2W__COPIED);
            q2w__mark_dirty(img, l1p);
        } else {
            /* Shared with a snapshot: the active L1 gets its own copy.
             * The data clusters keep their refcounts (one path each
             * before and after); the old table loses the active path
             * once the new L1 entry is durable. */
            if ((rc = q2w__free_room(img)) != Q2W_OK) return rc;
            rc = q2w__get(img, Q2W__K_L2, off, 0, &old_l2);
            if (rc != Q2W_OK) return rc;
            rc = q2w__find_free(img, &img->free_hint, &c);
            if (rc != Q2W_OK) return rc;
            if ((rc = q2w__reserve(img)) != Q2W_OK) return rc;
            q2w__take(img, c);
            rc = q2w__get(img, Q2W__K_L2, c << img->cluster_bits, 1, l2);
            QCOW2W_ASSERT(rc == Q2W_OK);
            memcpy(*l2, old_l2, (size_t)img->cluster_size);
            q2w__put64(l1p, (c << img->cluster_bits) | Q2W__COPIED);
            q2w__mark_dirty(img, l1p);
            q2w__defer_free(img, off >> img->cluster_bits, 1);
            *l2off = c << img->cluster_bits;
            return Q2W_OK;
        }
    }
    *l2off = off;
    return q2w__get(img, Q2W__K_L2, off, 0, l2);
}

/* Validate an L2 entry (at `where`) for use; *host is its cluster
 * offset. `writing`: the operation writes through it. */
static int q2w__l2_check(q2w_image *img, uint64_t e, uint64_t where,
                         uint64_t idx, int writing, uint64_t *host)
{
    if (e & Q2W__COMPRESSED) {
        /* The descriptor fills bits 0..61: no reserved bits to check. */
        *host = 0;
        if (e & Q2W__COPIED)
            return q2w__fail(img, Q2W_ERR_METADATA,
                             "COPIED set on a compressed cluster", where, idx);
        if (img->version == 2 && img->compression_type)
            return q2w__fail(img, Q2W_ERR_METADATA,
                             "compression type in a v2 image", where, idx);
        return Q2W_OK;
    }
    if (e & Q2W__L2_RESERVED)
        return q2w__fail(img, Q2W_ERR_METADATA, "l2 entry reserved bits",
                         where, idx);
    if (img->version == 2 && (e & Q2W__ZERO))
        return q2w__fail(img, Q2W_ERR_METADATA, "zero flag in a v2 image",
                         where, idx);
    *host = e & Q2W__OFF_MASK;
    if (*host & (img->cluster_size - 1))
        return q2w__fail(img, Q2W_ERR_METADATA, "l2 entry unaligned", where,
                         idx);
    /* Cheap overlap checks (a clean image never needs them): the header,
     * the L1 and refcount tables, the entry's own L2 table - the same
     * answer whatever the cache holds, so a read and a map agree - and,
     * for a write only, any other table in the cache (a safety net: the
     * write would land under a table written back later). */
    if (*host && (*host < img->cluster_size ||
                  (*host >= img->l1_offset &&
                   *host < img->l1_offset + (uint64_t)img->l1_size * 8) ||
                  (*host >= img->rt_offset &&
                   *host < img->rt_offset +
                               ((uint64_t)img->rt_clusters << img->cluster_bits)) ||
                  *host == (where & ~(img->cluster_size - 1)) ||
                  (writing && q2w__find(img, *host) >= 0)))
        return q2w__fail(img, Q2W_ERR_METADATA,
                         "data cluster overlaps metadata", where, idx);
    return Q2W_OK;
}

/* A compressed descriptor (cluster_bits cb): the host byte offset of the
 * data and the bytes qemu reads for it (the sectors it spans, less the part
 * of the first sector before the offset): at most two clusters. */
static void q2w__cz_desc(uint32_t cb, uint64_t e, uint64_t *coff,
                         uint64_t *clen)
{
    uint32_t sbits = 62u - (cb - 8u);
    uint64_t secs = ((e >> sbits) & ((1ull << (cb - 8u)) - 1)) + 1;
    *coff = e & ((1ull << sbits) - 1);
    *clen = secs * 512 - (*coff & 511);
}

/* The host clusters an L2 entry holds: [*first, *first + n). Compressed
 * entries may touch up to three (shared with neighbouring compressed data:
 * each descriptor is one reference path to every cluster it touches). */
static uint64_t q2w__entry_clusters(const q2w_image *img, uint64_t e,
                                    uint64_t *first)
{
    if (e & Q2W__COMPRESSED) {
        uint64_t coff, clen;
        q2w__cz_desc(img->cluster_bits, e, &coff, &clen);
        *first = coff >> img->cluster_bits;
        return ((coff + clen - 1) >> img->cluster_bits) - *first + 1;
    }
    *first = (e & Q2W__OFF_MASK) >> img->cluster_bits;
    return (e & Q2W__OFF_MASK) ? 1 : 0;
}

/* INFLATE-BEGIN */
/* ---- raw deflate decoder (RFC 1951) ----
 * Decodes straight into the caller's buffer, which doubles as the window.
 * Besides RFC 1951 it follows zlib's inflate() (one call, Z_FINISH) on the
 * edge cases, so an image qemu reads back reads the same way here:
 *  - once out is full, decoding carries on until the next byte would be
 *    written (through block headers and empty stored blocks, and through
 *    the length/distance codes of a match). A malformed header or symbol
 *    found there is an error; running out of input there is not.
 *  - A distance is checked against the output only if there is room left
 *    to copy into (zlib runs that check when it copies).
 *  - HLIT > 286 or HDIST > 30 is an error.
 *  - A code with one 1-bit code is allowed for lengths and distances; an
 *    all-zero distance code is allowed; both fail only when an unused code
 *    is read. */

/* LSB-first bit reader (RFC 1951 3.1.1). */
typedef struct {
    const unsigned char *in;
    size_t len, pos;
    uint64_t buf;
    unsigned cnt;
} q2w__inf_reader;

/* Canonical Huffman code plus a table indexed by the next fbits input bits
 * for short codes: an entry is (length << 9) | symbol, 0 = use the slow
 * path. */
typedef struct {
    uint16_t count[16];
    uint16_t *sym;      /* symbols sorted by code length, then by value */
    uint16_t *fast;     /* 1 << fbits entries */
    unsigned fbits, maxlen;
} q2w__inf_huff;

static const uint16_t q2w__inf_lbase[29] = {
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
    35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
static const unsigned char q2w__inf_lext[29] = {
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
    3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
static const uint16_t q2w__inf_dbase[30] = {
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
    257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577 };
static const unsigned char q2w__inf_dext[30] = {
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
    7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };

static void q2w__inf_refill(q2w__inf_reader *b)
{
    const unsigned char *p;
    unsigned i;
    uint64_t v = 0;

    if (b->len - b->pos >= 8) {
        p = b->in + b->pos;
        /* Top up to 56..63 bits with one 8-byte load. Bits past cnt may
         * already hold the start of the next byte; OR-ing it in again
         * later is harmless. */
        for (i = 0; i < 8; i++)
            v |= (uint64_t)p[i] << (8 * i);
        b->buf |= v << b->cnt;
        b->pos += (63 - b->cnt) >> 3;
        b->cnt |= 56;
        return;
    }
    while (b->cnt <= 56 && b->pos < b->len) {
        b->buf |= (uint64_t)b->in[b->pos++] << b->cnt;
        b->cnt += 8;
    }
}

/* Next n (<= 16) bits, or -2 if the input ends first. */
static int32_t q2w__inf_bits(q2w__inf_reader *b, unsigned n)
{
    uint32_t v;
    if (b->cnt < n) {
        q2w__inf_refill(b);
        if (b->cnt < n)
            return -2;
    }
    v = (uint32_t)b->buf & ((1u << n) - 1u);
    b->buf >>= n;
    b->cnt -= n;
    return (int32_t)v;
}

/* Next symbol, -2 if the input ends first, -3 for an unused code. */
static int32_t q2w__inf_decode(q2w__inf_reader *b, const q2w__inf_huff *h)
{
    int32_t code = 0, first = 0, idx = 0, n;
    unsigned len, lim, e;

    if (b->cnt < h->fbits)
        q2w__inf_refill(b);
    if (b->cnt >= h->fbits) {
        e = h->fast[(unsigned)b->buf & ((1u << h->fbits) - 1u)];
        if (e != 0) {
            b->buf >>= e >> 9;
            b->cnt -= e >> 9;
            return (int32_t)(e & 511u);
        }
    }
    /* Long or unused code, or close to the end of the input: go one bit
     * at a time so we stop on the same bit as zlib (this matters once out
     * is full). An unused code fails after maxlen bits, or 1 bit for an
     * empty code. */
    lim = h->maxlen ? h->maxlen : 1;
    for (len = 1; len <= lim; len++) {
        if (b->cnt == 0) {
            q2w__inf_refill(b);
            if (b->cnt == 0)
                return -2;
        }
        code |= (int32_t)(b->buf & 1u);
        b->buf >>= 1;
        b->cnt--;
        n = h->count[len];
        if (code < first + n)
            return h->sym[idx + code - first];
        idx += n;
        first = (first + n) << 1;
        code <<= 1;
    }
    return -3;
}

/* Builds h from n code lengths (each <= 15). clen = this is the
 * code-length code, where an incomplete set is never allowed. */
static int q2w__inf_build(q2w__inf_huff *h, const unsigned char *lens, unsigned n,
                      int clen)
{
    uint16_t offs[16];
    unsigned i, j, k, len, code, rev, size = 1u << h->fbits;
    int32_t left = 1;

    memset(h->count, 0, sizeof h->count);
    for (i = 0; i < n; i++)
        h->count[lens[i]]++;
    h->count[0] = 0;
    h->maxlen = 0;
    for (len = 1; len < 16; len++) {
        left = (left << 1) - h->count[len];
        if (left < 0)
            return -3;                      /* over-subscribed */
        if (h->count[len])
            h->maxlen = len;
    }
    memset(h->fast, 0, size * sizeof h->fast[0]);
    if (h->maxlen == 0) {
        /* zlib reads an empty code-length code as symbol 0, one bit per
         * symbol; copy that so we fail on the same bit. */
        if (clen) {
            h->count[1] = 2;
            h->sym[0] = h->sym[1] = 0;
            h->maxlen = 1;
        }
        return 0;
    }
    if (left > 0 && (clen || h->maxlen != 1))
        return -3;                          /* incomplete */

    offs[1] = 0;
    for (len = 1; len < 15; len++)
        offs[len + 1] = (uint16_t)(offs[len] + h->count[len]);
    for (i = 0; i < n; i++)
        if (lens[i])
            h->sym[offs[lens[i]]++] = (uint16_t)i;

    /* Codes are given out in sym[] order; the table is indexed by their
     * bit-reversed form because the bits arrive LSB first. */
    code = 0;
    k = 0;
    for (len = 1; len <= h->fbits && len <= h->maxlen; len++) {
        for (i = 0; i < h->count[len]; i++, k++, code++) {
            rev = 0;
            for (j = 0; j < len; j++)
                rev |= ((code >> j) & 1u) << (len - 1 - j);
            for (j = rev; j < size; j += 1u << len)
                h->fast[j] = (uint16_t)((len << 9) | h->sym[k]);
        }
        code <<= 1;
    }
    return 0;
}

/* Reads a dynamic block header (RFC 1951 3.2.7) into lit and dst. dst's
 * storage holds the code-length code while it is needed. */
static int q2w__inf_dynamic(q2w__inf_reader *b, q2w__inf_huff *lit, q2w__inf_huff *dst,
                        unsigned char *lens)
{
    static const unsigned char ord[19] = {
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };
    int32_t v, s;
    unsigned i, nlit, ndist, ncl, n, total, rep;
    unsigned char fill;

    v = q2w__inf_bits(b, 14);
    if (v < 0)
        return (int)v;
    nlit = ((unsigned)v & 31u) + 257;
    ndist = (((unsigned)v >> 5) & 31u) + 1;
    ncl = ((unsigned)v >> 10) + 4;
    if (nlit > 286 || ndist > 30)
        return -3;
    memset(lens, 0, 19);
    for (i = 0; i < ncl; i++) {
        v = q2w__inf_bits(b, 3);
        if (v < 0)
            return (int)v;
        lens[ord[i]] = (unsigned char)v;
    }
    if (q2w__inf_build(dst, lens, 19, 1) != 0)
        return -3;

    total = nlit + ndist;
    for (n = 0; n < total;) {
        s = q2w__inf_decode(b, dst);
        if (s < 0)
            return (int)s;
        if (s < 16) {
            lens[n++] = (unsigned char)s;
            continue;
        }
        /* Read the repeat count before the checks: zlib does too. */
        if (s == 16) {
            v = q2w__inf_bits(b, 2);
            rep = 3;
        } else if (s == 17) {
            v = q2w__inf_bits(b, 3);
            rep = 3;
        } else {
            v = q2w__inf_bits(b, 7);
            rep = 11;
        }
        if (v < 0)
            return (int)v;
        rep += (unsigned)v;
        if (s == 16) {
            if (n == 0)
                return -3;                  /* nothing to repeat */
            fill = lens[n - 1];
        } else {
            fill = 0;
        }
        if (rep > total - n)
            return -3;                      /* too many lengths */
        memset(lens + n, fill, rep);
        n += rep;
    }
    if (lens[256] == 0)
        return -3;                          /* no end-of-block code */
    if (q2w__inf_build(lit, lens, nlit, 0) != 0 ||
        q2w__inf_build(dst, lens + nlit, ndist, 0) != 0)
        return -3;
    return 0;
}

/* Decodes one Huffman block. 0 = end of block, 1 = out is full and more
 * output was due, < 0 = error. */
static int q2w__inf_codes(q2w__inf_reader *b, const q2w__inf_huff *lit,
                      const q2w__inf_huff *dst, unsigned char *out,
                      size_t out_len, size_t *pos)
{
    size_t op = *pos, len, dist, n, i;
    int32_t s, v;
    int r;

    for (;;) {
        s = q2w__inf_decode(b, lit);
        if (s < 256) {
            if (s < 0) {
                r = (int)s;
                break;
            }
            if (op == out_len) {
                r = 1;
                break;
            }
            out[op++] = (unsigned char)s;
            continue;
        }
        if (s == 256) {
            r = 0;
            break;
        }
        s -= 257;
        if (s >= 29) {                      /* codes 286 and 287 */
            r = -3;
            break;
        }
        v = q2w__inf_bits(b, q2w__inf_lext[s]);
        if (v < 0) {
            r = (int)v;
            break;
        }
        len = q2w__inf_lbase[s] + (size_t)v;
        s = q2w__inf_decode(b, dst);
        if (s < 0 || s >= 30) {             /* codes 30 and 31 */
            r = s < 0 ? (int)s : -3;
            break;
        }
        v = q2w__inf_bits(b, q2w__inf_dext[s]);
        if (v < 0) {
            r = (int)v;
            break;
        }
        dist = q2w__inf_dbase[s] + (size_t)v;
        if (op == out_len) {                /* before the distance check */
            r = 1;
            break;
        }
        if (dist > op) {
            r = -3;
            break;
        }
        n = out_len - op < len ? out_len - op : len;
        if (dist >= n) {
            memcpy(out + op, out + op - dist, n);
        } else {
            for (i = 0; i < n; i++)         /* overlapping: byte order */
                out[op + i] = out[op + i - dist];
        }
        op += n;
        if (n < len) {                      /* cut short by the end of out */
            r = 1;
            break;
        }
    }
    *pos = op;
    return r;
}

/* Stored block (RFC 1951 3.2.4); same return codes as q2w__inf_codes. */
static int q2w__inf_stored(q2w__inf_reader *b, unsigned char *out, size_t out_len,
                       size_t *pos)
{
    size_t op = *pos, n, len;
    const unsigned char *p;

    /* Skip to a byte boundary: the whole bytes still buffered are unread
     * input, so give them back. */
    b->pos -= b->cnt >> 3;
    b->buf = 0;
    b->cnt = 0;
    if (b->len - b->pos < 4)
        return -2;
    p = b->in + b->pos;
    len = (size_t)p[0] | (size_t)p[1] << 8;
    if ((len ^ ((size_t)p[2] | (size_t)p[3] << 8)) != 0xffff)
        return -3;
    b->pos += 4;
    while (len) {
        if (op == out_len) {
            *pos = op;
            return 1;
        }
        if (b->pos == b->len) {
            *pos = op;
            return -2;
        }
        n = len;
        if (n > out_len - op)
            n = out_len - op;
        if (n > b->len - b->pos)
            n = b->len - b->pos;
        memcpy(out + op, b->in + b->pos, n);
        op += n;
        b->pos += n;
        len -= n;
    }
    *pos = op;
    return 0;
}

/* Raw deflate (RFC 1951, no zlib/gzip header) from in[0..in_len) into
 * out[0..out_len). Returns 0 when exactly out_len bytes were produced
 * (the stream may continue past that point, or end exactly there:
 * both are success and the rest of the input is ignored - this matches
 * how qemu reads a compressed qcow2 cluster), or a negative code:
 * -1 the stream ended (final block done) before out_len bytes,
 * -2 the input ran out before out_len bytes,
 * -3 malformed stream (bad block type, bad stored length complement,
 *    over-subscribed/incomplete code lengths where RFC forbids, invalid
 *    symbol, distance too far back (before the start of out), repeat
 *    code with no previous length, too many lengths, etc). */
static int q2w__inflate(const unsigned char *in, size_t in_len,
                        unsigned char *out, size_t out_len)
{
    q2w__inf_reader b;
    q2w__inf_huff lit, dst;
    uint16_t lsym[288], lfast[512], dsym[32], dfast[256];
    unsigned char lens[320];
    size_t op = 0;
    int32_t hdr;
    int r, last = 0, fixed = 0;
    unsigned i;

    if (out_len == 0)
        return 0;
    b.in = in;
    b.len = in ? in_len : 0;
    b.pos = 0;
    b.buf = 0;
    b.cnt = 0;
    lit.sym = lsym;
    lit.fast = lfast;
    lit.fbits = 9;
    dst.sym = dsym;
    dst.fast = dfast;
    dst.fbits = 8;

    do {
        hdr = q2w__inf_bits(&b, 3);
        if (hdr < 0) {
            r = (int)hdr;
            break;
        }
        last = (int)(hdr & 1);
        switch (hdr >> 1) {
        case 0:
            r = q2w__inf_stored(&b, out, out_len, &op);
            break;
        case 1:
            if (!fixed) {                   /* RFC 1951 3.2.6 */
                for (i = 0; i < 288; i++)
                    lens[i] = (unsigned char)(i < 144 ? 8 : i < 256 ? 9 :
                                              i < 280 ? 7 : 8);
                for (i = 0; i < 32; i++)
                    lens[288 + i] = 5;
                q2w__inf_build(&lit, lens, 288, 0);
                q2w__inf_build(&dst, lens + 288, 32, 0);
                fixed = 1;
            }
            r = q2w__inf_codes(&b, &lit, &dst, out, out_len, &op);
            break;
        case 2:
            fixed = 0;
            r = q2w__inf_dynamic(&b, &lit, &dst, lens);
            if (r == 0)
                r = q2w__inf_codes(&b, &lit, &dst, out, out_len, &op);
            break;
        default:
            r = -3;                         /* block type 3 */
            break;
        }
    } while (r == 0 && !last);

    if (r == 1)
        return 0;
    if (r == 0)
        r = -1;
    /* Running out of input or reaching the end of the stream after out
     * is full is still success. */
    return r != -3 && op == out_len ? 0 : r;
}

/* ---- deflate (compressed cluster writes) ------------------------------------ */
/* LZ77 over a 4 KiB window (qemu inflates with windowBits -12), a chain of
 * hash candidates, one step of lazy matching; then each block of symbols
 * coded stored, with the fixed codes or with its own (dynamic) codes,
 * whichever is shortest. All memory is the caller's work area. */
#define Q2W__DF_WINDOW 4096u
#define Q2W__DF_HASH_BITS 15u
#define Q2W__DF_BLOCK 16384u      /* symbols a block */
#define Q2W__DF_CHAIN 128u        /* candidates tried a position */
#define Q2W__DF_NICE 128u         /* a match this long ends the search */
#define Q2W__DF_LAZY 32u          /* a shorter one looks one byte further */

typedef struct q2w__df {
    const unsigned char *in;
    size_t len;
    uint32_t *head;               /* hash -> position + 1 (0: none) */
    uint32_t *prev;               /* position % window -> older position + 1 */
    uint16_t *sym;                /* a literal (0..255) or 256 + length */
    uint16_t *dist;               /* its distance (0: literal) */
    size_t nsym, block_start;     /* the block's first input byte */
    size_t pend_start, pend_end;  /* input bytes decided stored, not yet
                                     written: consecutive stored blocks go
                                     out as one run (a header each 65535) */
    unsigned char *out;
    size_t cap, pos;
    uint64_t acc;
    unsigned nbits;
    int full;
} q2w__df;

static void q2w__df_bits(q2w__df *d, uint32_t v, unsigned n)
{
    d->acc |= (uint64_t)v << d->nbits;
    d->nbits += n;
    while (d->nbits >= 8) {
        if (d->pos < d->cap) d->out[d->pos++] = (unsigned char)d->acc;
        else d->full = 1;
        d->acc >>= 8;
        d->nbits -= 8;
    }
}

/* A Huffman code of n bits, most significant bit first: q2w__df_codes
 * keeps every code bit-reversed, so it goes out as any n bits. */
static void q2w__df_code(q2w__df *d, uint32_t code, unsigned n)
{
    q2w__df_bits(d, code, n);
}

/* Code lengths of at most maxbits for the n frequencies (0: unused): a
 * Huffman tree, its frequencies halved until it is shallow enough. */
static void q2w__df_lengths(const uint32_t *freq, unsigned n, unsigned maxbits,
                            unsigned char *len)
{
    uint32_t f[288], w[2 * 288];
    uint16_t leaf[288], parent[2 * 288];
    unsigned m, i, j, k, a, b, depth, deepest, used = 0;
    for (i = 0; i < n; i++) {
        f[i] = freq[i];
        len[i] = 0;
        if (f[i]) used++;
    }
    if (used == 0) return;
    if (used == 1) { /* one code still needs a bit (and a second, unused) */
        for (i = 0; i < n && !f[i]; i++) {}
        len[i] = 1;
        len[i == 0 ? 1 : 0] = 1;
        return;
    }
    for (;;) {
        /* leaves sorted by frequency (insertion sort: n <= 288) */
        for (m = 0, i = 0; i < n; i++) {
            if (!f[i]) continue;
            for (j = m; j > 0 && f[leaf[j - 1]] > f[i]; j--) leaf[j] = leaf[j - 1];
            leaf[j] = (uint16_t)i;
            m++;
        }
        /* two queues: leaves in order, then the inner nodes as made */
        for (i = 0; i < m; i++) w[i] = f[leaf[i]];
        a = 0;
        b = m;
        for (k = m; k < 2 * m - 1; k++) {
            unsigned x, y;
            x = (a < m && (b >= k || w[a] <= w[b])) ? a++ : b++;
            y = (a < m && (b >= k || w[a] <= w[b])) ? a++ : b++;
            w[k] = w[x] + w[y];
            parent[x] = (uint16_t)k;
            parent[y] = (uint16_t)k;
        }
        deepest = 0;
        for (i = 0; i < m; i++) {
            for (depth = 0, k = i; k != 2 * m - 2; k = parent[k]) depth++;
            len[leaf[i]] = (unsigned char)depth;
            if (depth > deepest) deepest = depth;
        }
        if (deepest <= maxbits) return;
        for (i = 0; i < n; i++)
            if (f[i]) f[i] = (f[i] >> 1) | 1u;
    }
}

/* Canonical codes for the lengths (RFC 1951 3.2.2), each bit-reversed
 * (the stream takes a code's most significant bit first). */
static void q2w__df_codes(const unsigned char *len, unsigned n, uint16_t *code)
{
    uint16_t count[16] = {0}, next[16];
    unsigned i, c = 0;
    for (i = 0; i < n; i++) count[len[i]]++;
    count[0] = 0;
    for (i = 1; i < 16; i++) {
        c = (c + count[i - 1]) << 1;
        next[i] = (uint16_t)c;
    }
    for (i = 0; i < n; i++)
        if (len[i]) {
            unsigned v = next[len[i]]++, r = 0, k;
            for (k = 0; k < len[i]; k++) r |= ((v >> k) & 1u) << (len[i] - 1u - k);
            code[i] = (uint16_t)r;
        }
}

/* The index of the highest bit set in x (1 <= x < 65536). */
static unsigned q2w__df_top_bit(unsigned x)
{
    unsigned b = 0;
    if (x >> 8) { x >>= 8; b = 8; }
    if (x >> 4) { x >>= 4; b += 4; }
    if (x >> 2) { x >>= 2; b += 2; }
    return b + (x >> 1);
}

/* The length code of a match length 3..258 (RFC 1951 3.2.5): four codes a
 * power of two from 11 on. */
static unsigned q2w__df_lcode(unsigned length)
{
    unsigned x = length - 3u, b;
    if (length == 258) return 28;
    if (x < 8) return x;
    b = q2w__df_top_bit(x);
    return 4u * (b - 1u) + ((x >> (b - 2u)) & 3u);
}

/* The distance code of a distance 1..32768: two codes a power of two. */
static unsigned q2w__df_dcode(unsigned dist)
{
    unsigned x = dist - 1u, b;
    if (dist <= 4) return x;
    b = q2w__df_top_bit(x);
    return 2u * b + ((x >> (b - 1u)) & 1u);
}

/* The bits a block takes with these lengths, from its symbol counts (the
 * extra bits of a code are the same for every symbol it stands for). */
static uint64_t q2w__df_cost(const uint32_t *lf, const uint32_t *dfq, const unsigned char *ll,
                             const unsigned char *dl)
{
    uint64_t bits = 0;
    unsigned i;
    for (i = 0; i < 257; i++) bits += (uint64_t)lf[i] * ll[i];
    for (i = 0; i < 29; i++) bits += (uint64_t)lf[257 + i] * (ll[257 + i] + q2w__inf_lext[i]);
    for (i = 0; i < 30; i++) bits += (uint64_t)dfq[i] * (dl[i] + q2w__inf_dext[i]);
    return bits;
}

static void q2w__df_symbols(q2w__df *d, const unsigned char *ll, const uint16_t *lc,
                            const unsigned char *dl, const uint16_t *dc)
{
    size_t i;
    for (i = 0; i < d->nsym; i++) {
        unsigned s = d->sym[i];
        if (s < 256) {
            q2w__df_code(d, lc[s], ll[s]);
        } else {
            unsigned length = s - 256u, dist = d->dist[i];
            unsigned l = q2w__df_lcode(length), x = q2w__df_dcode(dist);
            q2w__df_code(d, lc[257 + l], ll[257 + l]);
            q2w__df_bits(d, length - q2w__inf_lbase[l], q2w__inf_lext[l]);
            q2w__df_code(d, dc[x], dl[x]);
            q2w__df_bits(d, dist - q2w__inf_dbase[x], q2w__inf_dext[x]);
        }
    }
    q2w__df_code(d, lc[256], ll[256]);
}

/* The code-length sequence of a dynamic header, run-length coded (16:
 * repeat the last 3-6 times, 17: 3-10 zeros, 18: 11-138 zeros); rle holds
 * symbol | extra << 8. The count. */
static size_t q2w__df_rle(const unsigned char *lens, unsigned n, uint16_t *rle)
{
    size_t k = 0;
    unsigned i = 0;
    while (i < n) {
        unsigned v = lens[i], run = 1;
        while (i + run < n && lens[i + run] == v) run++;
        i += run;
        if (v == 0) {
            while (run >= 11) {
                unsigned r = run < 138 ? run : 138;
                rle[k++] = (uint16_t)(18u | (r - 11u) << 8);
                run -= r;
            }
            if (run >= 3) {
                rle[k++] = (uint16_t)(17u | (run - 3u) << 8);
                run = 0;
            }
        } else {
            rle[k++] = (uint16_t)v;
            run--;
            while (run >= 3) {
                unsigned r = run < 6 ? run : 6;
                rle[k++] = (uint16_t)(16u | (r - 3u) << 8);
                run -= r;
            }
        }
        while (run--) rle[k++] = (uint16_t)v;
    }
    return k;
}

static const unsigned char q2w__df_clorder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5,
                                                   11, 4, 12, 3, 13, 2, 14, 1, 15};

/* Input bytes [at, end) (at most 65535) as one stored block: to a byte
 * boundary, LEN and NLEN, then the bytes as they are. */
static void q2w__df_stored(q2w__df *d, size_t at, size_t end, int last)
{
    size_t n = end - at;
    q2w__df_bits(d, last ? 1u : 0u, 3);
    if (d->nbits) q2w__df_bits(d, 0, 8 - d->nbits);
    q2w__df_bits(d, (uint32_t)n, 16);
    q2w__df_bits(d, (uint32_t)(n ^ 0xffffu), 16);
    /* (byte-aligned now: nothing waits in the accumulator) */
    if (d->pos + n > d->cap) {
        d->pos = d->cap;
        d->full = 1;
        return;
    }
    memcpy(d->out + d->pos, d->in + at, n);
    d->pos += n;
}

/* The block of symbols so far (input bytes block_start .. end), coded the
 * shortest way. */
static void q2w__df_block(q2w__df *d, size_t end, int last)
{
    uint32_t lf[286], dfq[30], cf[19];
    unsigned char ll[288], dl[30], fl[288], fdl[30], cl[19], all[316];
    uint16_t lc[288], dcd[30], clc[19], rle[316];
    unsigned hlit = 286, hdist = 30, hclen = 19, i;
    uint64_t dyn, fix, stored;
    size_t k, nrle;
    memset(lf, 0, sizeof lf);
    memset(dfq, 0, sizeof dfq);
    memset(cf, 0, sizeof cf);
    for (k = 0; k < d->nsym; k++) {
        unsigned s = d->sym[k];
        if (s < 256) {
            lf[s]++;
        } else {
            lf[257 + q2w__df_lcode(s - 256u)]++;
            dfq[q2w__df_dcode(d->dist[k])]++;
        }
    }
    lf[256] = 1;
    q2w__df_lengths(lf, 286, 15, ll);
    q2w__df_lengths(dfq, 30, 15, dl);
    while (hlit > 257 && !ll[hlit - 1]) hlit--;
    while (hdist > 1 && !dl[hdist - 1]) hdist--;
    memcpy(all, ll, hlit);
    memcpy(all + hlit, dl, hdist);
    nrle = q2w__df_rle(all, hlit + hdist, rle);
    for (k = 0; k < nrle; k++) cf[rle[k] & 0xffu]++;
    q2w__df_lengths(cf, 19, 7, cl);
    while (hclen > 4 && !cl[q2w__df_clorder[hclen - 1]]) hclen--;
    dyn = 3 + 5 + 5 + 4 + 3ull * hclen + q2w__df_cost(lf, dfq, ll, dl);
    for (k = 0; k < nrle; k++) {
        unsigned s = rle[k] & 0xffu;
        dyn += cl[s] + (s == 16 ? 2u : s == 17 ? 3u : s == 18 ? 7u : 0u);
    }
    for (i = 0; i < 288; i++) fl[i] = (unsigned char)(i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8);
    for (i = 0; i < 30; i++) fdl[i] = 5;
    fix = 3 + q2w__df_cost(lf, dfq, fl, fdl);
    /* stored: to a byte boundary, then LEN/NLEN and the bytes, a header
     * for each 65535 of them */
    stored = (end - d->block_start) * 8 +
             ((end - d->block_start) / 65535 + 1) * (3 + 7 + 32);
    if (stored <= dyn && stored <= fix) {
        if (d->pend_end != d->block_start) d->pend_start = d->block_start;
        d->pend_end = end;
        /* whole 65535-byte blocks at once, the rest kept for the next */
        while (d->pend_end - d->pend_start > 65535 ||
               (!last && d->pend_end - d->pend_start == 65535)) {
            q2w__df_stored(d, d->pend_start, d->pend_start + 65535, 0);
            d->pend_start += 65535;
        }
        if (last) q2w__df_stored(d, d->pend_start, d->pend_end, 1);
        d->nsym = 0;
        d->block_start = end;
        return;
    }
    if (d->pend_end == d->block_start && d->pend_end > d->pend_start)
        q2w__df_stored(d, d->pend_start, d->pend_end, 0);
    d->pend_start = d->pend_end = 0;
    if (fix <= dyn) {
        q2w__df_bits(d, last ? 3u : 2u, 3);
        q2w__df_codes(fl, 288, lc);
        q2w__df_codes(fdl, 30, dcd);
        q2w__df_symbols(d, fl, lc, fdl, dcd);
    } else {
        q2w__df_bits(d, last ? 5u : 4u, 3);
        q2w__df_bits(d, hlit - 257u, 5);
        q2w__df_bits(d, hdist - 1u, 5);
        q2w__df_bits(d, hclen - 4u, 4);
        for (i = 0; i < hclen; i++) q2w__df_bits(d, cl[q2w__df_clorder[i]], 3);
        q2w__df_codes(cl, 19, clc);
        for (k = 0; k < nrle; k++) {
            unsigned s = rle[k] & 0xffu, x = rle[k] >> 8;
            q2w__df_code(d, clc[s], cl[s]);
            if (s == 16) q2w__df_bits(d, x, 2);
            if (s == 17) q2w__df_bits(d, x, 3);
            if (s == 18) q2w__df_bits(d, x, 7);
        }
        q2w__df_codes(ll, 286, lc);
        q2w__df_codes(dl, 30, dcd);
        q2w__df_symbols(d, ll, lc, dl, dcd);
    }
    d->nsym = 0;
    d->block_start = end;
}

/* The length of the common prefix of a and b, at most most: 8 bytes a
 * step while they agree (loads through memcpy: any alignment), then one. */
static size_t q2w__df_common(const unsigned char *a, const unsigned char *b, size_t most)
{
    size_t n = 0;
    while (n + 8 <= most) {
        uint64_t x, y;
        memcpy(&x, a + n, 8);
        memcpy(&y, b + n, 8);
        if (x != y) break;
        n += 8;
    }
    while (n < most && a[n] == b[n]) n++;
    return n;
}

/* The longest match for position i among its hash chain (the candidates
 * from cand): length (0 when under 3) and distance; longer than `best`
 * (0, or the match already in hand: only a longer one counts,
 * and a good one - 8 bytes or more - looks at a quarter of the chain, as
 * zlib does). */
static unsigned q2w__df_match(const q2w__df *d, size_t i, uint32_t cand, unsigned best,
                              unsigned *dist)
{
    size_t most = d->len - i < 258 ? d->len - i : 258;
    unsigned chain = best >= 8 ? Q2W__DF_CHAIN / 4 : Q2W__DF_CHAIN, found = 0;
    if (best >= most) return 0;
    while (cand && chain--) {
        size_t c = cand - 1u, n;
        if (i - c > Q2W__DF_WINDOW) break;
        if (d->in[c + best] == d->in[i + best] && d->in[c] == d->in[i]) {
            n = q2w__df_common(d->in + c, d->in + i, most);
            if (n > best) {
                found = 1;
                best = (unsigned)n;
                *dist = (unsigned)(i - c);
                if (n >= Q2W__DF_NICE || n == most) break;
            }
        }
        cand = d->prev[c % Q2W__DF_WINDOW];
        if (cand && cand - 1u >= c) break;   /* (the ring wrapped) */
    }
    return found && best >= 3 ? best : 0;
}

static uint32_t q2w__df_hash(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
    return (v * 2654435761u) >> (32u - Q2W__DF_HASH_BITS);
}

static void q2w__df_insert(q2w__df *d, size_t i)
{
    if (i + 3 > d->len) return;
    {
        uint32_t h = q2w__df_hash(d->in + i);
        d->prev[i % Q2W__DF_WINDOW] = d->head[h];
        d->head[h] = (uint32_t)(i + 1);
    }
}

static void q2w__df_emit(q2w__df *d, size_t end, unsigned s, unsigned dist)
{
    d->sym[d->nsym] = (uint16_t)s;
    d->dist[d->nsym] = (uint16_t)dist;
    if (++d->nsym == Q2W__DF_BLOCK) q2w__df_block(d, end, 0);
}

Q2WDEF size_t q2w_deflate(const void *in, size_t len, void *out, size_t cap, void *work)
{
    q2w__df d;
    uintptr_t p = work ? ((uintptr_t)work + 7u) & ~(uintptr_t)7u : 0;
    size_t i = 0;
    if (!in || !out || !work || len == 0 || len > ((size_t)1 << 31)) return 0;
    memset(&d, 0, sizeof d);
    d.in = (const unsigned char *)in;
    d.len = len;
    d.head = (uint32_t *)p;
    d.prev = d.head + (1u << Q2W__DF_HASH_BITS);
    d.sym = (uint16_t *)(d.prev + Q2W__DF_WINDOW);
    d.dist = d.sym + Q2W__DF_BLOCK;
    d.out = (unsigned char *)out;
    d.cap = cap;
    memset(d.head, 0, ((size_t)1 << Q2W__DF_HASH_BITS) * sizeof(uint32_t));
    while (i < len && !d.full) {
        unsigned dist = 0, n = 0;
        if (i + 3 <= len) n = q2w__df_match(&d, i, d.head[q2w__df_hash(d.in + i)], 0, &dist);
        if (n && n < Q2W__DF_LAZY && i + 4 <= len) {
            /* one byte on: a longer match there wins, this byte goes as a
             * literal */
            unsigned dist2 = 0, n2;
            size_t k;
            q2w__df_insert(&d, i);
            n2 = q2w__df_match(&d, i + 1, d.head[q2w__df_hash(d.in + i + 1)], n, &dist2);
            if (n2 > n) {
                q2w__df_emit(&d, i + 1, d.in[i], 0);
                i++;
                n = n2;
                dist = dist2;
                q2w__df_insert(&d, i);
            }
            q2w__df_emit(&d, i + n, 256u + n, dist);
            for (k = i + 1; k < i + n; k++) q2w__df_insert(&d, k);
            i += n;
        } else if (n) {
            size_t k;
            q2w__df_emit(&d, i + n, 256u + n, dist);
            for (k = i; k < i + n; k++) q2w__df_insert(&d, k);
            i += n;
        } else {
            q2w__df_insert(&d, i);
            q2w__df_emit(&d, i + 1, d.in[i], 0);
            i++;
        }
    }
    if (!d.full) q2w__df_block(&d, len, 1);
    if (d.nbits) q2w__df_bits(&d, 0, 8 - d.nbits);
    if (d.full && cap >= Q2W_DEFLATE_BOUND(len)) {
        /* Blocks that each cost less than storing them can together cost
         * more than one stored run: in a room of the bound, the run. */
        size_t at = 0;
        d.pos = d.nbits = 0;
        d.acc = 0;
        d.full = 0;
        do {
            size_t n = len - at < 65535 ? len - at : 65535;
            q2w__df_stored(&d, at, at + n, at + n == len);
            at += n;
        } while (at < len);
    }
    return d.full ? 0 : d.pos;
}
/* INFLATE-END */

/* The least cfg.mem that carves Q2W_MIN_SLOTS slots for this image (and,
 * with cz, the two clusters a compressed read needs): what a NOMEM's
 * `needed` says. */
static size_t q2w__mem_floor(const q2w_image *img, size_t frees, size_t cz)
{
    uintptr_t base = (uintptr_t)img->mem;
    size_t cs = (size_t)img->cluster_size;
    return (size_t)(((base + 7u) & ~(uintptr_t)7u) - base) +
           frees * sizeof(q2w__free) + cs + cz +
           Q2W_MIN_SLOTS * (cs + sizeof(q2w__slot));
}

/* Inflate compressed entry e into dst (one cluster). The first call reads
 * its bytes into czbuf and returns Q2W_PENDING; the call after the batch
 * inflates. Inflating waits for an empty batch: an op planned earlier may
 * still read the buffer being filled (scratch). */
static int q2w__cz_inflate(q2w_image *img, uint64_t e, uint64_t where,
                           uint64_t idx, unsigned char *dst)
{
    uint64_t coff, clen;
    int rc;
    if (img->compression_type != 0)
        return q2w__fail(img, Q2W_ERR_UNSUPPORTED,
                         "zstd compressed cluster (qemu-img convert reads it)",
                         where, idx);
    if (!img->czbuf) {
        q2w__fail(img, Q2W_ERR_NOMEM, "cfg.mem: compressed cluster buffer",
                  where, idx);
        img->err.needed = q2w__mem_floor(img, img->cap_frees,
                                         2 * (size_t)img->cluster_size);
        return Q2W_ERR_NOMEM;
    }
    q2w__cz_desc(img->cluster_bits, e, &coff, &clen);
    if (coff + clen > Q2W_MAX_HOST_OFFSET)
        return q2w__fail(img, Q2W_ERR_METADATA, "compressed cluster offset",
                         where, idx);
    if (img->cz_state != 2 || img->cz_entry != e) {
        if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
        q2w__emit(img, Q2W_OP_READ, coff, (size_t)clen, img->czbuf, NULL);
        img->cz_entry = e;
        img->cz_state = 1;
        return Q2W_PENDING;
    }
    if (img->n_ops) return Q2W_PENDING;
    if (q2w__inflate(img->czbuf, (size_t)clen, dst,
                     (size_t)img->cluster_size) != 0)
        return q2w__fail(img, Q2W_ERR_METADATA, "compressed cluster data",
                         where, idx);
    return Q2W_OK;
}

/* Every host cluster of compressed entry e has a refcount: it can be
 * dropped later without failing. */
static int q2w__cz_refs(q2w_image *img, uint64_t e, uint64_t where,
                        uint64_t idx, uint64_t *first, uint64_t *n)
{
    uint64_t c, v;
    int rc;
    *n = q2w__entry_clusters(img, e, first);
    for (c = *first; c < *first + *n; c++) {
        if ((rc = q2w__refcount(img, c, &v)) != Q2W_OK) return rc;
        if (v == 0)
            return q2w__fail(img, Q2W_ERR_METADATA,
                             "compressed cluster with refcount 0", where, idx);
    }
    return Q2W_OK;
}

/* ---- the steps of each operation ------------------------------------------- */
/* The bytes of the cluster at host offset `at` outside [in, in + n): from
 * `from` (a whole cluster's bytes), or zeros when it is NULL. */
static void q2w__write_around(q2w_image *img, uint64_t at, uint64_t in,
                              uint64_t n, const unsigned char *from)
{
    uint64_t cs = img->cluster_size;
    if (in) q2w__emit(img, Q2W_OP_WRITE, at, (size_t)in, NULL, from);
    if (in + n < cs)
        q2w__emit(img, Q2W_OP_WRITE, at + in + n, (size_t)(cs - in - n), NULL,
                  from ? from + in + n : NULL);
}

/* A partial write into the new cluster hc of virtual cluster vc, whose L2
 * entry was e: the rest of it from the cluster it replaces (the inflated
 * compressed data in scratch, or the shared cluster), the backing file,
 * or zeros. At most three ops. */
static void q2w__fill_new_cluster(q2w_image *img, uint64_t e, uint64_t shared,
                                  uint64_t vc, uint64_t hc, uint64_t in,
                                  uint64_t n)
{
    uint64_t cs = img->cluster_size;
    if (e & Q2W__COMPRESSED) {
        /* scratch holds the inflated cluster (cz_inflate) */
        q2w__write_around(img, hc, in, n, img->scratch);
    } else if (shared && !(e & Q2W__ZERO)) {
        /* The rest of the new cluster comes from the shared one. */
        q2w__emit(img, Q2W_OP_READ, shared, (size_t)cs, img->scratch, NULL);
        q2w__write_around(img, hc, in, n, img->scratch);
    } else if (e == 0 && q2w__backed(img, vc)) {
        q2w__emit(img, Q2W_OP_BACKING_READ, vc << img->cluster_bits,
                  (size_t)cs, img->scratch, NULL);
        q2w__write_around(img, hc, in, n, img->scratch);
    } else if (hc < img->file_end) {
        /* A reused cluster may hold stale bytes; past the end of the
         * file everything reads as zeros already. */
        q2w__write_around(img, hc, in, n, NULL);
    }
}

/* The write into host cluster `host`, which this path alone holds (entry
 * e at idx of the L2 table l2): in place, and a preallocated zero cluster
 * gets its zeros around the data. */
static int q2w__write_in_place(q2w_image *img, const unsigned char *src,
                               unsigned char *l2, uint64_t idx, uint64_t e,
                               uint64_t host, uint64_t in, uint64_t n)
{
    int rc;
    if ((rc = q2w__need_room(img, 3)) != Q2W_OK) return rc;
    if ((e & Q2W__ZERO) && n != img->cluster_size)
        q2w__write_around(img, host, in, n, NULL);
    q2w__emit(img, Q2W_OP_WRITE, host + in, (size_t)n, NULL,
              src ? src + img->op_pos : NULL);
    if (e != (host | Q2W__COPIED)) {
        q2w__put64(l2 + idx * 8, host | Q2W__COPIED);
        q2w__mark_dirty(img, l2);
    }
    img->op_pos += n;
    return Q2W_OK;
}

/* Write (src == NULL: zeros) into one cluster's worth of the request. */
static int q2w__step_write(q2w_image *img, const unsigned char *src)
{
    uint64_t cs = img->cluster_size, voff = img->op_off + img->op_pos;
    uint64_t vc = voff >> img->cluster_bits, in = voff & (cs - 1);
    uint64_t n = cs - in, l2off, e, host, idx, c, hc, shared = 0;
    uint64_t cz_first = 0, cz_n = 0;
    unsigned char *l2;
    int rc, full;
    if (n > img->op_len - img->op_pos) n = img->op_len - img->op_pos;
    full = n == cs;
    idx = vc & (q2w__l2_entries(img) - 1);
    if (!src) {
        /* Zeros over something that already reads as zeros: nothing. */
        rc = q2w__l2_for(img, vc, 0, &l2, &l2off);
        if (rc != Q2W_OK) return rc;
        e = l2 ? q2w__be64(l2 + idx * 8) : 0;
        if ((e == 0 && !q2w__backed(img, vc)) ||
            (img->version == 3 && e == Q2W__ZERO)) {
            img->op_pos += n;
            return Q2W_OK;
        }
    }
    rc = q2w__l2_for(img, vc, 1, &l2, &l2off);
    if (rc != Q2W_OK) return rc;
    e = q2w__be64(l2 + idx * 8);
    rc = q2w__l2_check(img, e, l2off + idx * 8, idx, 1, &host);
    if (rc != Q2W_OK) return rc;
    if (e & Q2W__COMPRESSED) {
        /* Never rewritten in place: a new cluster, the rest of it from the
         * inflated data, and the compressed clusters lose this path. */
        rc = q2w__cz_refs(img, e, l2off + idx * 8, idx, &cz_first, &cz_n);
        if (rc != Q2W_OK) return rc;
        if (!full) {
            rc = q2w__cz_inflate(img, e, l2off + idx * 8, idx, img->scratch);
            if (rc != Q2W_OK) return rc;
        }
    }
    if (host && !(e & Q2W__COPIED)) {
        uint64_t v;
        rc = q2w__refcount(img, host >> img->cluster_bits, &v);
        if (rc != Q2W_OK) return rc;
        if (v == 0)
            return q2w__fail(img, Q2W_ERR_METADATA,
                             "data cluster with refcount 0",
                             l2off + idx * 8, idx);
        if (v > 1) shared = host;   /* copy on write */
    }
    if (host && !shared)
        return q2w__write_in_place(img, src, l2, idx, e, host, in, n);
    if ((shared || cz_n) && (rc = q2w__free_room(img)) != Q2W_OK) return rc;
    rc = q2w__find_free(img, &img->free_hint, &c);
    if (rc != Q2W_OK) return rc;
    if ((rc = q2w__need_room(img, 4)) != Q2W_OK) return rc;
    hc = c << img->cluster_bits;
    if (!full) q2w__fill_new_cluster(img, e, shared, vc, hc, in, n);
    q2w__take(img, c);
    q2w__emit(img, Q2W_OP_WRITE, hc + in, (size_t)n, NULL,
              src ? src + img->op_pos : NULL);
    q2w__put64(l2 + idx * 8, hc | Q2W__COPIED);
    q2w__mark_dirty(img, l2);
    if (shared) q2w__defer_free(img, shared >> img->cluster_bits, 1);
    if (cz_n) q2w__defer_free(img, cz_first, cz_n);
    img->op_pos += n;
    return Q2W_OK;
}

/* A whole cluster made to read as zeros (v3, `zero`) or unallocated (v2
 * discard); the data cluster it had is freed. */
static int q2w__step_unmap(q2w_image *img, int zero)
{
    uint64_t voff = img->op_off + img->op_pos;
    uint64_t cs = img->op_len - img->op_pos < img->cluster_size
                      ? img->op_len - img->op_pos : img->cluster_size;
    uint64_t vc = voff >> img->cluster_bits, l2off, e, host, idx, want;
    uint64_t cz_n = 1;
    unsigned char *l2;
    int rc;
    idx = vc & (q2w__l2_entries(img) - 1);
    want = zero ? Q2W__ZERO : 0;
    rc = q2w__l2_for(img, vc, 0, &l2, &l2off);
    if (rc != Q2W_OK) return rc;
    if (!l2 && (!zero || !q2w__backed(img, vc))) {
        img->op_pos += cs;
        return Q2W_OK;
    }
    if ((rc = q2w__free_room(img)) != Q2W_OK) return rc;
    /* Creates the table, or sets COPIED on it if the flag was stale. */
    rc = q2w__l2_for(img, vc, 1, &l2, &l2off);
    if (rc != Q2W_OK) return rc;
    e = q2w__be64(l2 + idx * 8);
    rc = q2w__l2_check(img, e, l2off + idx * 8, idx, 1, &host);
    if (rc != Q2W_OK) return rc;
    if (e == want || (e == 0 && !q2w__backed(img, vc))) {
        img->op_pos += cs;
        return Q2W_OK;
    }
    if (host && !(e & Q2W__COPIED)) {
        uint64_t v;
        rc = q2w__refcount(img, host >> img->cluster_bits, &v);
        if (rc != Q2W_OK) return rc;
        if (v == 0)
            return q2w__fail(img, Q2W_ERR_METADATA,
                             "data cluster with refcount 0",
                             l2off + idx * 8, idx);
    }
    if (e & Q2W__COMPRESSED) {
        rc = q2w__cz_refs(img, e, l2off + idx * 8, idx, &host, &cz_n);
        if (rc != Q2W_OK) return rc;
        host <<= img->cluster_bits;
    }
    /* The table may have been copied just now (shared with a snapshot),
     * using a free-list slot: look again before taking another. */
    if (host && (rc = q2w__free_room(img)) != Q2W_OK) return rc;
    /* The active path to the old cluster goes (a snapshot may keep it). */
    q2w__put64(l2 + idx * 8, want);
    q2w__mark_dirty(img, l2);
    if (host) q2w__defer_free(img, host >> img->cluster_bits, cz_n);
    img->op_pos += cs;
    return Q2W_OK;
}

/* The L2 table of virtual cluster vc as the operation sees it: through
 * the snapshot's L1 (its pieces cached read-only) for a snapshot read or
 * map, else the active one; *l2 NULL when the cluster has none. */
static int q2w__l2_view(q2w_image *img, uint64_t vc, unsigned char **l2,
                        uint64_t *l2off)
{
    uint64_t cs = img->cluster_size;
    uint64_t l1i = vc >> (img->cluster_bits - 3), byte = l1i * 8;
    uint64_t piece = byte & ~(cs - 1), l1e;
    unsigned char *l1d;
    int rc;
    if (img->op != Q2W__OP_SNAP_READ && img->op != Q2W__OP_SNAP_MAP)
        return q2w__l2_for(img, vc, 0, l2, l2off);
    *l2 = NULL;
    *l2off = 0;
    if (l1i >= img->sn_l1_size) return Q2W_OK;
    rc = q2w__get(img, Q2W__K_SL1, img->sn_l1_off + piece, 0, &l1d);
    if (rc != Q2W_OK) return rc;
    l1e = q2w__be64(l1d + (byte - piece));
    *l2off = l1e & Q2W__OFF_MASK;
    if ((l1e & Q2W__L1_RESERVED) || (*l2off & (cs - 1)))
        return q2w__fail(img, Q2W_ERR_METADATA, "snapshot l1 entry",
                         img->sn_l1_off + byte, l1i);
    return *l2off ? q2w__get(img, Q2W__K_L2, *l2off, 0, l2) : Q2W_OK;
}

static int q2w__step_read(q2w_image *img)
{
    uint64_t cs = img->cluster_size, voff = img->op_off + img->op_pos;
    uint64_t vc = voff >> img->cluster_bits, in = voff & (cs - 1);
    uint64_t n = cs - in, l2off, e, host = 0, idx;
    unsigned char *l2, *dst = img->op_dst + img->op_pos;
    int rc;
    if (n > img->op_len - img->op_pos) n = img->op_len - img->op_pos;
    idx = vc & (q2w__l2_entries(img) - 1);
    if ((rc = q2w__l2_view(img, vc, &l2, &l2off)) != Q2W_OK) return rc;
    e = l2 ? q2w__be64(l2 + idx * 8) : 0;
    if (e) {
        rc = q2w__l2_check(img, e, l2off + idx * 8, idx, 0, &host);
        if (rc != Q2W_OK) return rc;
    }
    if (e & Q2W__COMPRESSED) {
        int whole = in == 0 && n == cs;
        rc = q2w__cz_inflate(img, e, l2off + idx * 8, idx,
                             whole ? dst : img->scratch);
        if (rc != Q2W_OK) return rc;
        if (!whole) memcpy(dst, img->scratch + in, (size_t)n);
    } else if (host && !(e & Q2W__ZERO)) {
        if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
        q2w__emit(img, Q2W_OP_READ, host + in, (size_t)n, dst, NULL);
    } else if (e == 0 && q2w__backed(img, vc)) {
        if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
        q2w__emit(img, Q2W_OP_BACKING_READ, voff, (size_t)n, dst, NULL);
    } else {
        memset(dst, 0, (size_t)n);
    }
    img->op_pos += n;
    return Q2W_OK;
}


/* One L2 table's worth of q2w_map: the clusters from op_off + op_pos are
 * classified and added to the extent while they continue it (same kind;
 * for data, the next host byte). Q2W__DONE when the extent ends. */
static int q2w__step_map(q2w_image *img)
{
    uint64_t cs = img->cluster_size, n_l2 = q2w__l2_entries(img);
    uint64_t voff = img->op_off + img->op_pos;
    uint64_t vc = voff >> img->cluster_bits, in = voff & (cs - 1);
    uint64_t l2off, idx = vc & (n_l2 - 1);
    q2w_extent *x = img->map_out;
    unsigned char *l2;
    int rc;
    if ((rc = q2w__l2_view(img, vc, &l2, &l2off)) != Q2W_OK) return rc;
    for (; idx < n_l2 && img->op_pos < img->op_len; idx++, vc++, in = 0) {
        uint64_t e = l2 ? q2w__be64(l2 + idx * 8) : 0, host = 0, n;
        int kind, alloc = 1;
        if (e && (rc = q2w__l2_check(img, e, l2off + idx * 8, idx, 0, &host)) !=
                     Q2W_OK)
            return rc;
        if (e & Q2W__COMPRESSED) kind = Q2W_EXTENT_COMPRESSED, host = 0;
        else if (host && !(e & Q2W__ZERO)) kind = Q2W_EXTENT_DATA;
        else if (e == 0 && q2w__backed(img, vc)) kind = Q2W_EXTENT_BACKING, alloc = 0;
        else kind = Q2W_EXTENT_ZERO, alloc = (e & Q2W__ZERO) != 0;
        if (!alloc) host = 0;
        /* (host: where this cluster's first byte of the run is, or 0) */
        if (host) host += in;
        if (img->op_pos == 0) {
            x->kind = kind;
            x->allocated = alloc;
            x->host = host;
        } else if (kind != x->kind || alloc != x->allocated ||
                   (host || x->host ? host != x->host + img->op_pos : 0)) {
            return Q2W__DONE;
        }
        n = cs - in < img->op_len - img->op_pos ? cs - in
                                                : img->op_len - img->op_pos;
        img->op_pos += n;
        x->len = img->op_pos;
        /* No table and no backing file: the rest of its range is zeros
         * (cost per table, not per cluster, on a sparse image). */
        if (!l2 && !img->has_backing) {
            uint64_t rest = (n_l2 - idx - 1) << img->cluster_bits;
            uint64_t left = img->op_len - img->op_pos;
            img->op_pos += rest < left ? rest : left;
            x->len = img->op_pos;
            break;
        }
    }
    return img->op_pos >= img->op_len ? Q2W__DONE : Q2W_OK;
}

/* ---- runs of clusters and copies through scratch ------------------------- */
/* img->run_phase: the run is searched for, then its clusters taken. */
enum { Q2W__RUN_SEARCH, Q2W__RUN_TAKE };

static void q2w__run_begin(q2w_image *img)
{
    img->run_start = img->run_cursor = img->free_hint;
    img->run_next = 0;
    img->run_phase = Q2W__RUN_SEARCH;
}

/* n contiguous free clusters, found by a restartable search and taken;
 * the run starts at img->run_start. A run cannot span a range whose
 * refcount block still has to be made (that block goes on the range's
 * first free cluster), so it must fit in one range. */
static int q2w__run_alloc(q2w_image *img, uint64_t n)
{
    uint64_t x;
    int rc;
    if (n >= (1ull << q2w__epb_bits(img)))
        return q2w__fail(img, Q2W_ERR_LIMIT,
                         "table larger than one refcount block's range", 0, n);
    if (img->run_phase == Q2W__RUN_SEARCH) {
        while (img->run_next < n) {
            rc = q2w__find_free(img, &img->run_cursor, &x);
            if (rc != Q2W_OK) return rc;
            if (x != img->run_start + img->run_next) {
                img->run_start = x;
                img->run_next = 0;
            }
            img->run_next++;
            img->run_cursor = img->run_start + img->run_next;
            img->pin_epoch++;
        }
        img->run_phase = Q2W__RUN_TAKE;
        img->run_next = 0;
    }
    while (img->run_next < n) {
        unsigned char *blk, *rte;
        img->pin_epoch++;
        rc = q2w__rb_for(img, img->run_start + img->run_next, &blk, &rte);
        if (rc != Q2W_OK) return rc;
        q2w__take(img, img->run_start + img->run_next);
        img->run_next++;
    }
    return Q2W_OK;
}

/* Copy [src, src + len) of the file to dst through scratch, a cluster at a
 * time; progress in img->copy_done (the caller zeroes it first). */
static int q2w__copy(q2w_image *img, uint64_t src, uint64_t dst, uint64_t len)
{
    while (img->copy_done < len) {
        uint64_t n = len - img->copy_done;
        if (n > img->cluster_size) n = img->cluster_size;
        if (q2w__room(img) < 2) return Q2W_PENDING;
        q2w__emit(img, Q2W_OP_READ, src + img->copy_done, (size_t)n,
                  img->scratch, NULL);
        q2w__emit(img, Q2W_OP_WRITE, dst + img->copy_done, (size_t)n, NULL,
                  img->scratch);
        img->copy_done += n;
    }
    return Q2W_OK;
}

/* ---- snapshots ------------------------------------------------------------- */
/* The table is walked an entry at a time: a cluster of it is read into
 * scratch and every entry wholly inside is used from there; an entry longer
 * than a cluster is refused (Q2W_ERR_LIMIT). */
static void q2w__walk_begin(q2w_image *img)
{
    img->walk_pos = 0;
    img->walk_index = 0;
    img->walk_loaded = 0;
}

static uint64_t q2w__entry_len(const unsigned char *e)
{
    return (40u + (uint64_t)q2w__be32(e + 36) + q2w__be16(e + 12) +
            q2w__be16(e + 14) + 7u) & ~7ull;
}

static int q2w__snap_next(q2w_image *img, const unsigned char **ent,
                          uint64_t *elen)
{
    uint64_t cs = img->cluster_size, len = 0;
    uint64_t rel = img->walk_pos - img->walk_scratch_pos;
    const unsigned char *e = NULL;
    uint64_t where = img->snapshots_offset + img->walk_pos, l1o;
    int rc;
    if (img->walk_index >= img->nb_snapshots) return Q2W__DONE;
    if (img->walk_loaded && img->walk_pos >= img->walk_scratch_pos &&
        rel + 40 <= cs) {
        e = img->scratch + rel;
        len = q2w__entry_len(e);
        if (rel + len > cs) e = NULL;
    }
    if (!e) {
        if (img->walk_loaded && img->walk_scratch_pos == img->walk_pos)
            return q2w__fail(img, Q2W_ERR_LIMIT,
                             "snapshot entry longer than a cluster", where,
                             img->walk_index);
        if (where >= Q2W_MAX_HOST_OFFSET)
            return q2w__fail(img, Q2W_ERR_METADATA, "snapshot table", where,
                             img->walk_index);
        if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
        q2w__emit(img, Q2W_OP_READ, where, (size_t)cs, img->scratch, NULL);
        img->walk_scratch_pos = img->walk_pos;
        img->walk_loaded = 1;
        return Q2W_PENDING;
    }
    l1o = q2w__be64(e);
    if (q2w__be32(e + 36) > 1024 || (l1o & (cs - 1)) ||
        l1o >= Q2W_MAX_HOST_OFFSET ||
        (uint64_t)q2w__be32(e + 8) * 8 > Q2W_MAX_L1_BYTES ||
        (q2w__be32(e + 8) && !l1o))
        return q2w__fail(img, Q2W_ERR_METADATA, "snapshot table entry", where,
                         img->walk_index);
    *ent = e;
    *elen = len;
    img->walk_pos += len;
    img->walk_index++;
    return Q2W_OK;
}

/* Fill a q2w_snapshot from a table entry. */
static int q2w__snap_fill(q2w_image *img, const unsigned char *e, uint64_t len,
                          uint32_t index, uint64_t pos, q2w_snapshot *out)
{
    uint32_t extra = q2w__be32(e + 36);
    uint16_t idl = q2w__be16(e + 12), nml = q2w__be16(e + 14);
    if (idl >= sizeof out->id || nml > Q2W_MAX_SNAPSHOT_NAME)
        return q2w__fail(img, Q2W_ERR_LIMIT, "snapshot id or name length",
                         img->snapshots_offset + pos, index);
    memset(out, 0, sizeof *out);
    out->index = index;
    out->l1_offset = q2w__be64(e);
    out->l1_size = q2w__be32(e + 8);
    out->date_sec = q2w__be32(e + 16);
    out->date_nsec = q2w__be32(e + 20);
    out->vm_clock_ns = q2w__be64(e + 24);
    out->vm_state_size = extra >= 8 ? q2w__be64(e + 40) : q2w__be32(e + 32);
    out->disk_size = extra >= 16 ? q2w__be64(e + 48) : 0;
    memcpy(out->id, e + 40 + extra, idl);
    memcpy(out->name, e + 40 + extra + idl, nml);
    out->id_len = idl;
    out->name_len = nml;
    out->entry_offset = pos;
    out->entry_len = (uint32_t)len;
    return Q2W_OK;
}

/* Walk the table at open: its length and the largest numeric id. */
static int q2w__step_open_snapshots(q2w_image *img)
{
    for (;;) {
        const unsigned char *e;
        uint64_t len, id = 0, i;
        uint16_t idl;
        int digits = 1, rc = q2w__snap_next(img, &e, &len);
        if (rc == Q2W__DONE) {
            img->snap_len = img->walk_pos;
            return Q2W__DONE;
        }
        if (rc != Q2W_OK) return rc;
        idl = q2w__be16(e + 12);
        for (i = 0; i < idl && i < 18; i++) {
            unsigned char ch = e[40 + q2w__be32(e + 36) + i];
            if (ch < '0' || ch > '9') { digits = 0; break; }
            id = id * 10 + (ch - '0');
        }
        if (digits && idl && idl < 18 && id > img->snap_max_id)
            img->snap_max_id = id;
    }
}

/* get (sn_name == NULL: by index) and find (by name). */
static int q2w__step_snap_get(q2w_image *img)
{
    for (;;) {
        const unsigned char *e;
        uint64_t len, pos = img->walk_pos;
        uint32_t index = (uint32_t)img->walk_index;
        int rc = q2w__snap_next(img, &e, &len);
        if (rc == Q2W__DONE)
            return q2w__fail(img, Q2W_ERR_NOT_FOUND, "snapshot", 0,
                             img->sn_name ? 0 : img->sn_index);
        if (rc != Q2W_OK) return rc;
        if (img->sn_name ? (q2w__be16(e + 14) == img->sn_name_len &&
                            memcmp(e + 40 + q2w__be32(e + 36) +
                                       q2w__be16(e + 12),
                                   img->sn_name, img->sn_name_len) == 0)
                         : index == img->sn_index) {
            rc = q2w__snap_fill(img, e, len, index, pos, img->sn_out);
            return rc != Q2W_OK ? rc : Q2W__DONE;
        }
    }
}

/* ---- passes over an L1 table and its L2 tables ------------------------------
 * One entry per step, position in (pass_l1_index, pass_l2_step): step 0
 * visits the L2 table before its entries, 1..n the entries, n + 1 the
 * table after them. */
/* CHECK: nothing would overflow (before a bump); VERIFY: every entry is
 * valid and every referenced cluster has a refcount (before a point of no
 * return, so the passes after it cannot fail on the image's contents);
 * BUMP / DROP: one path more / less; COPIED: flags set from refcounts;
 * UNBUMP: a BUMP undone up to (pass_stop_l1_index, pass_stop_l2_step),
 * where it met a refcount CHECK could not foresee (a host cluster that
 * several compressed descriptors share, each one more path to it);
 * EXPAND: zero flags made explicit for a v2 header (q2w__expand_entry). */
enum {
    Q2W__PASS_CHECK, Q2W__PASS_VERIFY, Q2W__PASS_BUMP, Q2W__PASS_DROP,
    Q2W__PASS_COPIED, Q2W__PASS_UNBUMP, Q2W__PASS_EXPAND
};

static int q2w__rc_add(q2w_image *img, uint64_t c, int delta, uint64_t *now)
{
    unsigned char *blk, *rte;
    uint64_t i, v;
    int rc = q2w__rb_for(img, c, &blk, &rte);
    if (rc != Q2W_OK) return rc;
    i = c & ((1ull << q2w__epb_bits(img)) - 1);
    v = blk ? q2w__rc_get(blk, i, img->refcount_order) : 0;
    if (delta && !blk)
        return q2w__fail(img, Q2W_ERR_METADATA,
                         "referenced cluster without a refcount block",
                         c << img->cluster_bits, c);
    if (delta < 0 && v == 0)
        return q2w__fail(img, Q2W_ERR_METADATA, "refcount below zero",
                         c << img->cluster_bits, c);
    if (delta > 0 && v >= q2w__rc_max(img->refcount_order))
        return q2w__fail(img, Q2W_ERR_LIMIT, "refcount would overflow",
                         c << img->cluster_bits, v);
    if (delta) {
        v = delta > 0 ? v + 1 : v - 1;
        q2w__rc_set(blk, i, img->refcount_order, v);
        q2w__mark_dirty(img, blk);
        if (v == 0 && c < img->free_hint) img->free_hint = c;
    }
    *now = v;
    return Q2W_OK;
}

/* The step of a pass on the L2 table at l2off itself (named by the L1
 * entry l1e at l1p, byte `byte` of the table at l1_off): its refcount is
 * looked at before its entries, or changed after them in a DROP. */
static int q2w__pass_l2_table(q2w_image *img, int pass, uint64_t l1_off,
                              uint64_t byte, unsigned char *l1p, uint64_t l1e,
                              uint64_t l2off)
{
    uint64_t v;
    int rc;
    int before = img->pass_l2_step == 0;
    if (before != (pass != Q2W__PASS_DROP)) {
        img->pass_l2_step++;
        return Q2W_OK;
    }
    rc = q2w__rc_add(img, l2off >> img->cluster_bits, 0, &v);
    if (rc != Q2W_OK) return rc;
    if ((pass == Q2W__PASS_VERIFY || pass == Q2W__PASS_EXPAND) && v == 0)
        return q2w__fail(img, Q2W_ERR_METADATA,
                         "L2 table with refcount 0", l1_off + byte,
                         img->pass_l1_index);
    img->pass_l2_rc = v;
    if (pass == Q2W__PASS_CHECK &&
        v >= q2w__rc_max(img->refcount_order))
        return q2w__fail(img, Q2W_ERR_LIMIT, "refcount would overflow",
                         l2off, v);
    /* A drop runs past a point of no return: a count already
     * below its references (a corrupt image) is left as it is. */
    if (pass == Q2W__PASS_BUMP || pass == Q2W__PASS_UNBUMP ||
        (pass == Q2W__PASS_DROP && v)) {
        rc = q2w__rc_add(img, l2off >> img->cluster_bits,
                         pass == Q2W__PASS_BUMP ? 1 : -1, &v);
        if (rc != Q2W_OK) return rc;
    }
    if (pass == Q2W__PASS_DROP && v == 0) {
        long f = q2w__find(img, l2off);
        if (f >= 0) img->slots[f].state = Q2W__S_EMPTY;
    }
    if ((pass == Q2W__PASS_BUMP || pass == Q2W__PASS_COPIED ||
         pass == Q2W__PASS_UNBUMP) && img->pass_kind == Q2W__K_L1 &&
        ((l1e & Q2W__COPIED) != 0) != (v == 1)) {
        q2w__put64(l1p, v == 1 ? l1e | Q2W__COPIED
                               : l1e & ~Q2W__COPIED);
        q2w__mark_dirty(img, l1p);
    }
    img->pass_l2_step++;
    return Q2W_OK;
}

static int q2w__expand_entry(q2w_image *img, unsigned char *l2, uint64_t l2off,
                             uint64_t entry);

/* The step of a pass on entry pass_l2_step - 1 of the L2 table at l2off:
 * the clusters it references get one path more or less, and its COPIED
 * flag follows their refcount. */
static int q2w__pass_l2_entry(q2w_image *img, int pass, uint64_t l2off)
{
    uint64_t cs = img->cluster_size, entry = img->pass_l2_step - 1;
    unsigned char *l2, *ep;
    uint64_t e, first, n, c, v;
    int delta = pass == Q2W__PASS_BUMP ? 1
                : pass == Q2W__PASS_DROP || pass == Q2W__PASS_UNBUMP
                    ? -1 : 0;
    int rc = q2w__get(img, Q2W__K_L2, l2off, 0, &l2);
    if (rc != Q2W_OK) return rc;
    ep = l2 + entry * 8;
    e = q2w__be64(ep);
    if ((e & Q2W__COMPRESSED) ? (e & Q2W__COPIED) != 0
                              : (e & Q2W__L2_RESERVED) != 0)
        return q2w__fail(img, Q2W_ERR_METADATA, "l2 entry reserved bits",
                         l2off + entry * 8, entry);
    if (pass == Q2W__PASS_EXPAND) return q2w__expand_entry(img, l2, l2off, entry);
    n = q2w__entry_clusters(img, e, &first);
    v = 0;
    /* Every cluster's block must be at hand before any change, so
     * a restart never counts one twice: look at them all first. */
    for (c = first; c < first + n; c++) {
        rc = q2w__rc_add(img, c, 0, &v);
        if (rc != Q2W_OK) return rc;
        if (v == 0 && pass == Q2W__PASS_DROP) {
            delta = 0;   /* as above: left as it is */
            continue;
        }
        if (v == 0)
            return q2w__fail(img, Q2W_ERR_METADATA,
                             "referenced cluster with refcount 0",
                             c * cs, entry);
        if ((delta > 0 || pass == Q2W__PASS_CHECK) &&
            v >= q2w__rc_max(img->refcount_order))
            return q2w__fail(img, Q2W_ERR_LIMIT,
                             "refcount would overflow", c * cs, v);
    }
    if (delta)
        for (c = first; c < first + n; c++) {
            rc = q2w__rc_add(img, c, delta, &v);
            QCOW2W_ASSERT(rc == Q2W_OK);
        }
    if ((pass == Q2W__PASS_BUMP || pass == Q2W__PASS_COPIED ||
         pass == Q2W__PASS_UNBUMP) &&
        (e & Q2W__OFF_MASK) && !(e & Q2W__COMPRESSED) &&
        ((e & Q2W__COPIED) != 0) != (v == 1)) {
        q2w__put64(ep, v == 1 ? e | Q2W__COPIED : e & ~Q2W__COPIED);
        q2w__mark_dirty(img, l2);
    }
    img->pass_l2_step++;
    return Q2W_OK;
}

static int q2w__pass(q2w_image *img, int pass, uint64_t l1_off,
                     uint32_t l1_size, int l1_kind)
{
    uint64_t cs = img->cluster_size, per = cs / 8;
    img->pass_kind = l1_kind;
    while (img->pass_l1_index < l1_size) {
        uint64_t byte = img->pass_l1_index * 8, piece = byte & ~(cs - 1);
        uint64_t l1e, l2off;
        unsigned char *l1d, *l1p;
        int rc;
        if (pass == Q2W__PASS_UNBUMP &&
            (img->pass_l1_index > img->pass_stop_l1_index ||
             (img->pass_l1_index == img->pass_stop_l1_index &&
              img->pass_l2_step >= img->pass_stop_l2_step)))
            return Q2W_OK;
        img->pin_epoch++;
        rc = q2w__get(img, l1_kind, l1_off + piece, 0, &l1d);
        if (rc != Q2W_OK) return rc;
        l1p = l1d + (byte - piece);
        l1e = q2w__be64(l1p);
        l2off = l1e & Q2W__OFF_MASK;
        if ((l1e & Q2W__L1_RESERVED) || (l2off & (cs - 1)))
            return q2w__fail(img, Q2W_ERR_METADATA, "l1 entry",
                             l1_off + byte, img->pass_l1_index);
        if (!l2off || img->pass_l2_step > per + 1) {
            img->pass_l1_index++;
            img->pass_l2_step = 0;
            continue;
        }
        if (img->pass_l2_step == 0 || img->pass_l2_step == per + 1)
            rc = q2w__pass_l2_table(img, pass, l1_off, byte, l1p, l1e, l2off);
        else
            rc = q2w__pass_l2_entry(img, pass, l2off);
        if (rc != Q2W_OK) return rc;
    }
    return Q2W_OK;
}


/* Snapshot create, img->phase in order. Until the header switch the
 * snapshot is not visible: a crash leaks only. */
enum {
    Q2W__SNAP_CREATE_CHECK_LIMITS,   /* count and entry size */
    Q2W__SNAP_CREATE_FIND_MAX_ID,    /* walk the table; checkpoint */
    Q2W__SNAP_CREATE_CHECK_OVERFLOW, /* over the active tables */
    Q2W__SNAP_CREATE_ALLOC_L1_COPY,  /* a run for the L1 copy */
    Q2W__SNAP_CREATE_COPY_L1,        /* from disk, current after the
                                        checkpoint */
    Q2W__SNAP_CREATE_BUMP_REFCOUNTS, /* COPIED cleared; checkpoint */
    Q2W__SNAP_CREATE_UNDO_BUMP,      /* an overflow met during the bump */
    Q2W__SNAP_CREATE_BUILD_ENTRY,
    Q2W__SNAP_CREATE_ALLOC_TABLE,    /* a run for the new table */
    Q2W__SNAP_CREATE_WRITE_TABLE,    /* the old entries and the new one;
                                        checkpoint */
    Q2W__SNAP_CREATE_SWITCH_HEADER,  /* one write, flushed */
    Q2W__SNAP_CREATE_FREE_OLD_TABLE
};

/* The id of a new snapshot, as qemu picks it: the largest numeric id in
 * the table + 1. Its digits go to id (no NUL); returns their count. */
static size_t q2w__snap_new_id(const q2w_image *img, char id[24])
{
    char tmp[24];
    size_t k = 0, idl = 0;
    uint64_t idv = img->snap_max_id + 1;
    do { tmp[k++] = (char)('0' + idv % 10); idv /= 10; } while (idv);
    while (k) id[idl++] = tmp[--k];
    return idl;
}

/* The header pair (nb_snapshots, snapshots_offset) switched to the new
 * table at sn_new_off in one write. */
static int q2w__snap_switch_header(q2w_image *img, uint32_t nb_snapshots)
{
    unsigned char f[12];
    q2w__put32(f, nb_snapshots);
    q2w__put64(f + 4, img->sn_new_off);
    return q2w__switch_header(img, 60, f, sizeof f);
}

/* A bump met an overflow CHECK could not see (several descriptors on one
 * host cluster): what was bumped is lowered again, COPIED as it was, the
 * L1 copy of n1 clusters freed, and then the refusal. Nothing referenced
 * the raised counts, so lowering them needs no checkpoint first. */
static int q2w__snap_create_undo_bump(q2w_image *img, uint64_t n1)
{
    int rc = q2w__pass(img, Q2W__PASS_UNBUMP, img->l1_offset, img->l1_size,
                       Q2W__K_L1);
    if (rc != Q2W_OK) return rc;
    if (n1) {
        if ((rc = q2w__free_room(img)) != Q2W_OK) return rc;
        q2w__defer_free(img, img->sn_l1_off >> img->cluster_bits, n1);
    }
    img->err = img->sn_err;
    return img->err.code;
}

/* The active L1 copied (n1 clusters) and one path more to everything it
 * reaches: CHECK_OVERFLOW .. BUMP_REFCOUNTS, or UNDO_BUMP. */
static int q2w__snap_create_copy_l1(q2w_image *img, uint64_t n1)
{
    int rc;
    switch (img->phase) {
    case Q2W__SNAP_CREATE_CHECK_OVERFLOW:
        rc = q2w__pass(img, Q2W__PASS_CHECK, img->l1_offset, img->l1_size,
                       Q2W__K_L1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_CREATE_ALLOC_L1_COPY;
        q2w__run_begin(img);
        /* fall through */
    case Q2W__SNAP_CREATE_ALLOC_L1_COPY:
        if (n1 && (rc = q2w__run_alloc(img, n1)) != Q2W_OK) return rc;
        img->sn_l1_off = n1 ? img->run_start << img->cluster_bits : 0;
        img->phase = Q2W__SNAP_CREATE_COPY_L1;
        img->copy_done = 0;
        /* fall through */
    case Q2W__SNAP_CREATE_COPY_L1:
        rc = q2w__copy(img, img->l1_offset, img->sn_l1_off,
                       (uint64_t)img->l1_size * 8);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_CREATE_BUMP_REFCOUNTS;
        img->pass_l1_index = img->pass_l2_step = 0;
        /* fall through */
    case Q2W__SNAP_CREATE_BUMP_REFCOUNTS:
        rc = q2w__pass(img, Q2W__PASS_BUMP, img->l1_offset, img->l1_size,
                       Q2W__K_L1);
        if (rc == Q2W_ERR_LIMIT) {
            img->sn_err = img->err;
            img->pass_stop_l1_index = img->pass_l1_index;
            img->pass_stop_l2_step = img->pass_l2_step;
            img->pass_l1_index = img->pass_l2_step = 0;
            img->phase = Q2W__SNAP_CREATE_UNDO_BUMP;
            return Q2W_OK;
        }
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_CREATE_BUILD_ENTRY;
        return q2w__checkpoint_start(img);
    default: /* Q2W__SNAP_CREATE_UNDO_BUMP */
        return q2w__snap_create_undo_bump(img, n1);
    }
}

/* The new table entry (elen bytes, id of idl digits) into snapbuf: v3
 * extra data of 24 bytes with the disk size, as qemu writes it. */
static void q2w__snap_build_entry(q2w_image *img, const char *id, size_t idl,
                                  uint64_t elen)
{
    unsigned char *e = img->snapbuf;
    memset(e, 0, (size_t)elen);
    q2w__put64(e, img->sn_l1_off);
    q2w__put32(e + 8, img->l1_size);
    q2w__put16(e + 12, (uint16_t)idl);
    q2w__put16(e + 14, (uint16_t)img->sn_name_len);
    q2w__put32(e + 16, img->sn_date_sec);
    q2w__put32(e + 20, img->sn_date_nsec);
    q2w__put64(e + 24, img->sn_vm_clock);
    q2w__put32(e + 36, 24);            /* extra: as qemu writes it */
    q2w__put64(e + 48, img->size);     /* disk size */
    memcpy(e + 64, id, idl);
    memcpy(e + 64 + idl, img->sn_name, img->sn_name_len);
}

/* The new snapshot table (the old entries and the new one, new_len bytes)
 * written and switched to: BUILD_ENTRY .. FREE_OLD_TABLE. */
static int q2w__snap_create_table(q2w_image *img, const char *id, size_t idl,
                                  uint64_t elen, uint64_t new_len)
{
    uint64_t cs = img->cluster_size, cb = img->cluster_bits;
    int rc;
    switch (img->phase) {
    case Q2W__SNAP_CREATE_BUILD_ENTRY:
        q2w__snap_build_entry(img, id, idl, elen);
        img->phase = Q2W__SNAP_CREATE_ALLOC_TABLE;
        q2w__run_begin(img);
        /* fall through */
    case Q2W__SNAP_CREATE_ALLOC_TABLE:
        rc = q2w__run_alloc(img, (new_len + cs - 1) / cs);
        if (rc != Q2W_OK) return rc;
        img->sn_new_off = img->run_start << cb;
        img->phase = Q2W__SNAP_CREATE_WRITE_TABLE;
        img->copy_done = 0;
        /* fall through */
    case Q2W__SNAP_CREATE_WRITE_TABLE:
        rc = q2w__copy(img, img->snapshots_offset, img->sn_new_off,
                       img->snap_len);
        if (rc != Q2W_OK) return rc;
        if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
        q2w__emit(img, Q2W_OP_WRITE, img->sn_new_off + img->snap_len,
                  (size_t)elen, NULL, img->snapbuf);
        img->phase = Q2W__SNAP_CREATE_SWITCH_HEADER;
        return q2w__checkpoint_start(img);
    case Q2W__SNAP_CREATE_SWITCH_HEADER:
        rc = q2w__snap_switch_header(img, img->nb_snapshots + 1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_CREATE_FREE_OLD_TABLE;
        return Q2W_PENDING;
    default: { /* Q2W__SNAP_CREATE_FREE_OLD_TABLE */
        uint64_t old_clu = (img->snap_len + cs - 1) / cs;
        if ((rc = q2w__free_room(img)) != Q2W_OK) return rc;
        if (old_clu && img->snapshots_offset)
            q2w__defer_free(img, img->snapshots_offset >> cb, old_clu);
        img->nb_snapshots++;
        img->snapshots_offset = img->sn_new_off;
        img->snap_len = new_len;
        return Q2W__DONE;
    }
    }
}

static int q2w__step_snap_create(q2w_image *img)
{
    uint64_t cs = img->cluster_size;
    uint64_t n1 = ((uint64_t)img->l1_size * 8 + cs - 1) / cs;
    uint64_t elen;
    int rc;
    char id[24];
    size_t idl = q2w__snap_new_id(img, id);
    elen = (40u + 24u + idl + img->sn_name_len + 7u) & ~7ull;
    switch (img->phase) {
    case Q2W__SNAP_CREATE_CHECK_LIMITS:
        if (img->nb_snapshots >= Q2W_MAX_SNAPSHOTS)
            return q2w__fail(img, Q2W_ERR_LIMIT, "snapshot count", 60,
                             img->nb_snapshots);
        if (elen > cs)
            return q2w__fail(img, Q2W_ERR_LIMIT,
                             "snapshot entry longer than a cluster", 0, elen);
        /* The id is the largest id in the table + 1, as qemu picks it:
         * walk the table again (a delete may have taken the largest). */
        img->snap_max_id = 0;
        q2w__walk_begin(img);
        img->phase = Q2W__SNAP_CREATE_FIND_MAX_ID;
        /* fall through */
    case Q2W__SNAP_CREATE_FIND_MAX_ID:
        rc = q2w__step_open_snapshots(img);
        if (rc != Q2W__DONE) return rc;
        img->phase = Q2W__SNAP_CREATE_CHECK_OVERFLOW;
        img->pass_l1_index = img->pass_l2_step = 0;
        return q2w__checkpoint_start(img);
    case Q2W__SNAP_CREATE_CHECK_OVERFLOW:
    case Q2W__SNAP_CREATE_ALLOC_L1_COPY:
    case Q2W__SNAP_CREATE_COPY_L1:
    case Q2W__SNAP_CREATE_BUMP_REFCOUNTS:
    case Q2W__SNAP_CREATE_UNDO_BUMP:
        return q2w__snap_create_copy_l1(img, n1);
    default:
        return q2w__snap_create_table(img, id, idl, elen,
                                      img->snap_len + elen);
    }
}

/* Snapshot delete, img->phase in order. */
enum {
    Q2W__SNAP_DELETE_FIND,
    Q2W__SNAP_DELETE_VERIFY_SNAPSHOT_TABLES,
    Q2W__SNAP_DELETE_VERIFY_ACTIVE_TABLES,
    Q2W__SNAP_DELETE_VERIFY_L1_REFCOUNTS, /* then a checkpoint */
    Q2W__SNAP_DELETE_START_RUN,           /* for the table without it */
    Q2W__SNAP_DELETE_ALLOC_TABLE,
    Q2W__SNAP_DELETE_COPY_ENTRIES_BEFORE,
    Q2W__SNAP_DELETE_COPY_ENTRIES_AFTER,  /* then a checkpoint */
    Q2W__SNAP_DELETE_SWITCH_HEADER,       /* one write, flushed */
    Q2W__SNAP_DELETE_FREE_OLD_TABLE,
    Q2W__SNAP_DELETE_DROP_REFCOUNTS,      /* of the snapshot's paths: the
                                             references are gone from disk */
    Q2W__SNAP_DELETE_FREE_L1,
    Q2W__SNAP_DELETE_SET_COPIED,          /* where a refcount came back to
                                             1; checkpoint */
    Q2W__SNAP_DELETE_DONE
};

/* The entry named sn_name: its place in the table, its L1 table and
 * (op_arg) its disk size - without one recorded (v2 entries), the
 * current size, as qemu takes it. */
static int q2w__snap_find_entry(q2w_image *img)
{
    for (;;) {
        const unsigned char *e;
        uint64_t len, pos = img->walk_pos;
        int rc = q2w__snap_next(img, &e, &len);
        if (rc == Q2W__DONE)
            return q2w__fail(img, Q2W_ERR_NOT_FOUND, "snapshot", 0, 0);
        if (rc != Q2W_OK) return rc;
        if (q2w__be16(e + 14) == img->sn_name_len &&
            memcmp(e + 40 + q2w__be32(e + 36) + q2w__be16(e + 12),
                   img->sn_name, img->sn_name_len) == 0) {
            img->sn_pos = pos;
            img->sn_len = len;
            img->sn_l1_off = q2w__be64(e);
            img->sn_l1_size = q2w__be32(e + 8);
            img->op_arg = q2w__be32(e + 36) >= 16 ? q2w__be64(e + 48)
                                                   : img->size;
            return Q2W_OK;
        }
    }
}

/* Found, and every refusal decided before the header switch: the
 * snapshot's tables and the active ones (their COPIED pass comes after
 * it) are verified, and so are the refcounts of its L1 clusters (counted
 * in pass_l1_index). FIND .. VERIFY_L1_REFCOUNTS. */
static int q2w__snap_delete_verify(q2w_image *img)
{
    uint64_t cs = img->cluster_size, cb = img->cluster_bits, v, n1;
    int rc;
    switch (img->phase) {
    case Q2W__SNAP_DELETE_FIND:
        if ((rc = q2w__snap_find_entry(img)) != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_DELETE_VERIFY_SNAPSHOT_TABLES;
        img->pass_l1_index = img->pass_l2_step = 0;
        /* fall through */
    case Q2W__SNAP_DELETE_VERIFY_SNAPSHOT_TABLES:
        rc = q2w__pass(img, Q2W__PASS_VERIFY, img->sn_l1_off, img->sn_l1_size,
                       Q2W__K_SL1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_DELETE_VERIFY_ACTIVE_TABLES;
        img->pass_l1_index = img->pass_l2_step = 0;
        /* fall through */
    case Q2W__SNAP_DELETE_VERIFY_ACTIVE_TABLES:
        rc = q2w__pass(img, Q2W__PASS_VERIFY, img->l1_offset, img->l1_size,
                       Q2W__K_L1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_DELETE_VERIFY_L1_REFCOUNTS;
        img->pass_l1_index = 0;
        /* fall through */
    default: /* Q2W__SNAP_DELETE_VERIFY_L1_REFCOUNTS */
        /* (the size FIND set: this call may have found the entry) */
        n1 = ((uint64_t)img->sn_l1_size * 8 + cs - 1) / cs;
        while (img->pass_l1_index < n1) {
            uint64_t at = img->sn_l1_off + img->pass_l1_index * cs;
            img->pin_epoch++;
            if ((rc = q2w__rc_add(img, at >> cb, 0, &v)) != Q2W_OK) return rc;
            if (v == 0)
                return q2w__fail(img, Q2W_ERR_METADATA,
                                 "snapshot L1 table with refcount 0", at,
                                 img->pass_l1_index);
            img->pass_l1_index++;
        }
        img->phase = Q2W__SNAP_DELETE_START_RUN;
        return q2w__checkpoint_start(img);
    }
}

/* The table without the entry (m clusters) written and switched to:
 * START_RUN .. SWITCH_HEADER. */
static int q2w__snap_delete_table(q2w_image *img, uint64_t m)
{
    int rc;
    switch (img->phase) {
    case Q2W__SNAP_DELETE_START_RUN:
        img->phase = Q2W__SNAP_DELETE_ALLOC_TABLE;
        q2w__run_begin(img);
        /* fall through */
    case Q2W__SNAP_DELETE_ALLOC_TABLE:
        if (m && (rc = q2w__run_alloc(img, m)) != Q2W_OK) return rc;
        img->sn_new_off = m ? img->run_start << img->cluster_bits : 0;
        img->phase = Q2W__SNAP_DELETE_COPY_ENTRIES_BEFORE;
        img->copy_done = 0;
        /* fall through */
    case Q2W__SNAP_DELETE_COPY_ENTRIES_BEFORE:
        rc = q2w__copy(img, img->snapshots_offset, img->sn_new_off,
                       img->sn_pos);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_DELETE_COPY_ENTRIES_AFTER;
        img->copy_done = 0;
        /* fall through */
    case Q2W__SNAP_DELETE_COPY_ENTRIES_AFTER:
        rc = q2w__copy(img, img->snapshots_offset + img->sn_pos + img->sn_len,
                       img->sn_new_off + img->sn_pos,
                       img->snap_len - img->sn_pos - img->sn_len);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_DELETE_SWITCH_HEADER;
        return q2w__checkpoint_start(img);
    default: /* Q2W__SNAP_DELETE_SWITCH_HEADER */
        rc = q2w__snap_switch_header(img, img->nb_snapshots - 1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_DELETE_FREE_OLD_TABLE;
        return Q2W_PENDING;
    }
}

/* Switched: the old table freed, the refcounts of the snapshot's paths
 * down (the references are gone from disk), its L1 table (n1 clusters)
 * freed, and COPIED set again where a refcount came back to 1:
 * FREE_OLD_TABLE .. DONE. */
static int q2w__snap_delete_drop_paths(q2w_image *img, uint64_t n1,
                                       uint64_t new_len)
{
    uint64_t cs = img->cluster_size, cb = img->cluster_bits, v;
    int rc;
    switch (img->phase) {
    case Q2W__SNAP_DELETE_FREE_OLD_TABLE: {
        uint64_t old_clu = (img->snap_len + cs - 1) / cs;
        if ((rc = q2w__free_room(img)) != Q2W_OK) return rc;
        if (old_clu) q2w__defer_free(img, img->snapshots_offset >> cb, old_clu);
        img->nb_snapshots--;
        img->snapshots_offset = img->sn_new_off;
        img->snap_len = new_len;
        img->phase = Q2W__SNAP_DELETE_DROP_REFCOUNTS;
        img->pass_l1_index = img->pass_l2_step = 0;
    }
        /* fall through */
    case Q2W__SNAP_DELETE_DROP_REFCOUNTS:
        rc = q2w__pass(img, Q2W__PASS_DROP, img->sn_l1_off, img->sn_l1_size,
                       Q2W__K_SL1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_DELETE_FREE_L1;
        img->pass_l1_index = 0;
        /* fall through */
    case Q2W__SNAP_DELETE_FREE_L1:
        while (img->pass_l1_index < n1) {
            uint64_t at = img->sn_l1_off + img->pass_l1_index * cs;
            long f = q2w__find(img, at);
            img->pin_epoch++;
            if (f >= 0) img->slots[f].state = Q2W__S_EMPTY;
            if ((rc = q2w__rc_add(img, at >> cb, 0, &v)) != Q2W_OK) return rc;
            if (v && (rc = q2w__rc_add(img, at >> cb, -1, &v)) != Q2W_OK)
                return rc;
            img->pass_l1_index++;
        }
        img->phase = Q2W__SNAP_DELETE_SET_COPIED;
        img->pass_l1_index = img->pass_l2_step = 0;
        /* fall through */
    case Q2W__SNAP_DELETE_SET_COPIED:
        rc = q2w__pass(img, Q2W__PASS_COPIED, img->l1_offset, img->l1_size,
                       Q2W__K_L1);
        if (rc != Q2W_OK) return rc;
        /* End consistent on disk: the lowered refcounts and the COPIED
         * flags set again go out together, in order. */
        img->phase = Q2W__SNAP_DELETE_DONE;
        return q2w__checkpoint_start(img);
    default: /* Q2W__SNAP_DELETE_DONE */
        return Q2W__DONE;
    }
}

static int q2w__step_snap_delete(q2w_image *img)
{
    uint64_t cs = img->cluster_size;
    /* (sn_len and sn_l1_size are FIND's: these phases come in later calls) */
    uint64_t new_len = img->snap_len - img->sn_len;
    uint64_t n1 = ((uint64_t)img->sn_l1_size * 8 + cs - 1) / cs;
    switch (img->phase) {
    case Q2W__SNAP_DELETE_FIND:
    case Q2W__SNAP_DELETE_VERIFY_SNAPSHOT_TABLES:
    case Q2W__SNAP_DELETE_VERIFY_ACTIVE_TABLES:
    case Q2W__SNAP_DELETE_VERIFY_L1_REFCOUNTS:
        return q2w__snap_delete_verify(img);
    case Q2W__SNAP_DELETE_START_RUN:
    case Q2W__SNAP_DELETE_ALLOC_TABLE:
    case Q2W__SNAP_DELETE_COPY_ENTRIES_BEFORE:
    case Q2W__SNAP_DELETE_COPY_ENTRIES_AFTER:
    case Q2W__SNAP_DELETE_SWITCH_HEADER:
        return q2w__snap_delete_table(img, (new_len + cs - 1) / cs);
    default:
        return q2w__snap_delete_drop_paths(img, n1, new_len);
    }
}

/* A new table of nclu clusters: a run of free clusters taken and written
 * as zeros (its place in img->run_start) - resize's and apply's new L1. */
static int q2w__zeroed_run(q2w_image *img, uint64_t nclu)
{
    int rc;
    if ((rc = q2w__run_alloc(img, nclu)) != Q2W_OK) return rc;
    if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
    q2w__emit(img, Q2W_OP_WRITE, img->run_start << img->cluster_bits,
              (size_t)(nclu * img->cluster_size), NULL, NULL);
    return Q2W_OK;
}

/* The header's size and L1 (entries, at the run just made) in one write. */
static int q2w__switch_size_l1(q2w_image *img, uint64_t size, uint32_t l1_size)
{
    unsigned char f[24];
    q2w__put64(f, size);
    q2w__put32(f + 8, 0);
    q2w__put32(f + 12, l1_size);
    q2w__put64(f + 16, img->run_start << img->cluster_bits);
    return q2w__switch_header(img, 24, f, sizeof f);
}

/* Snapshot apply (revert: qemu-img snapshot -a), img->phase in order. The
 * snapshot's paths gain one reference first and the active ones lose
 * theirs after the switch, so a crash anywhere leaks only; every refusal
 * the image can cause comes before the switch. */
enum {
    Q2W__SNAP_APPLY_FIND,             /* its entry, L1 and disk size */
    Q2W__SNAP_APPLY_VERIFY_SNAPSHOT,  /* its tables */
    Q2W__SNAP_APPLY_VERIFY_ACTIVE,    /* the tables the drop walks */
    Q2W__SNAP_APPLY_CHECK_OVERFLOW,   /* then a checkpoint */
    Q2W__SNAP_APPLY_BUMP,             /* one path more to all it reaches,
                                         COPIED cleared; checkpoint */
    Q2W__SNAP_APPLY_UNDO_BUMP,        /* an overflow met during the bump */
    Q2W__SNAP_APPLY_ALLOC_L1,         /* a run of free clusters, zeroed */
    Q2W__SNAP_APPLY_COPY_L1,          /* its L1, COPIED clear; checkpoint */
    Q2W__SNAP_APPLY_SWITCH_HEADER,    /* size and L1 in one write */
    Q2W__SNAP_APPLY_DROP,             /* the old active paths */
    Q2W__SNAP_APPLY_FREE_OLD_L1,
    Q2W__SNAP_APPLY_SET_COPIED,       /* where a count came back to 1;
                                         checkpoint */
    Q2W__SNAP_APPLY_DONE
};

/* Copy len bytes of an L1 table from src to dst through scratch with
 * every COPIED flag clear: each piece is read, and changed only once the
 * read has run; its write ends the batch (the next read into scratch
 * comes after it has run). */
static int q2w__copy_l1(q2w_image *img, uint64_t src, uint64_t dst,
                        uint64_t len)
{
    while (img->copy_done < len) {
        uint64_t n = len - img->copy_done, i;
        if (n > img->cluster_size) n = img->cluster_size;
        if (!img->copy_read) {
            if (q2w__room(img) < 1) return Q2W_PENDING;
            q2w__emit(img, Q2W_OP_READ, src + img->copy_done, (size_t)n,
                      img->scratch, NULL);
            img->copy_read = 1;
            return Q2W_PENDING;
        }
        if (q2w__room(img) < 1) return Q2W_PENDING;
        for (i = 0; i < n; i += 8)
            q2w__put64(img->scratch + i,
                       q2w__be64(img->scratch + i) & ~Q2W__COPIED);
        q2w__emit(img, Q2W_OP_WRITE, dst + img->copy_done, (size_t)n, NULL,
                  img->scratch);
        img->copy_read = 0;
        img->copy_done += n;
        if (img->copy_done < len) return Q2W_PENDING;
    }
    return Q2W_OK;
}

/* Found, verified and bumped: FIND .. UNDO_BUMP. need: L1 entries the
 * snapshot's disk size takes. */
static int q2w__snap_apply_prepare(q2w_image *img)
{
    uint64_t cs = img->cluster_size;
    uint64_t span = cs * q2w__l2_entries(img), need, nclu;
    int rc;
    switch (img->phase) {
    case Q2W__SNAP_APPLY_FIND:
        if ((rc = q2w__snap_find_entry(img)) != Q2W_OK) return rc;
        if (img->op_arg > (1ull << 62) ||
            (uint64_t)img->sn_l1_size * 8 > Q2W_MAX_L1_BYTES ||
            (img->sn_l1_off & (cs - 1)))
            return q2w__fail(img, Q2W_ERR_METADATA, "snapshot entry",
                             img->snapshots_offset + img->sn_pos,
                             img->sn_l1_size);
        need = (img->op_arg + span - 1) / span;
        if (need < img->sn_l1_size) need = img->sn_l1_size;
        nclu = (need * 8 + cs - 1) / cs;
        if (need * 8 > Q2W_MAX_L1_BYTES ||
            (nclu ? nclu : 1) >= (1ull << q2w__epb_bits(img)))
            return q2w__fail(img, Q2W_ERR_LIMIT, "snapshot disk size",
                             img->snapshots_offset + img->sn_pos, need);
        img->ap_l1_size = (uint32_t)need;
        img->phase = Q2W__SNAP_APPLY_VERIFY_SNAPSHOT;
        img->pass_l1_index = img->pass_l2_step = 0;
        /* fall through */
    case Q2W__SNAP_APPLY_VERIFY_SNAPSHOT:
        rc = q2w__pass(img, Q2W__PASS_VERIFY, img->sn_l1_off,
                       img->sn_l1_size, Q2W__K_SL1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_APPLY_VERIFY_ACTIVE;
        img->pass_l1_index = img->pass_l2_step = 0;
        /* fall through */
    case Q2W__SNAP_APPLY_VERIFY_ACTIVE:
        rc = q2w__pass(img, Q2W__PASS_VERIFY, img->l1_offset, img->l1_size,
                       Q2W__K_L1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_APPLY_CHECK_OVERFLOW;
        img->pass_l1_index = img->pass_l2_step = 0;
        /* fall through */
    case Q2W__SNAP_APPLY_CHECK_OVERFLOW:
        rc = q2w__pass(img, Q2W__PASS_CHECK, img->sn_l1_off,
                       img->sn_l1_size, Q2W__K_SL1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_APPLY_BUMP;
        img->pass_l1_index = img->pass_l2_step = 0;
        return q2w__checkpoint_start(img);
    case Q2W__SNAP_APPLY_BUMP:
        rc = q2w__pass(img, Q2W__PASS_BUMP, img->sn_l1_off, img->sn_l1_size,
                       Q2W__K_SL1);
        if (rc == Q2W_ERR_LIMIT) {
            img->sn_err = img->err;
            img->pass_stop_l1_index = img->pass_l1_index;
            img->pass_stop_l2_step = img->pass_l2_step;
            img->pass_l1_index = img->pass_l2_step = 0;
            img->phase = Q2W__SNAP_APPLY_UNDO_BUMP;
            return Q2W_OK;
        }
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_APPLY_ALLOC_L1;
        q2w__run_begin(img);
        return q2w__checkpoint_start(img);
    default: /* Q2W__SNAP_APPLY_UNDO_BUMP: nothing references the raised
                counts yet, so lowering them needs no checkpoint first */
        rc = q2w__pass(img, Q2W__PASS_UNBUMP, img->sn_l1_off,
                       img->sn_l1_size, Q2W__K_SL1);
        if (rc != Q2W_OK) return rc;
        img->err = img->sn_err;
        return img->err.code;
    }
}

/* The new active L1 (a copy of the snapshot's, nclu clusters), switched
 * to; the old one's paths dropped: ALLOC_L1 .. DONE. */
static int q2w__snap_apply_switch(q2w_image *img)
{
    uint64_t cs = img->cluster_size, cb = img->cluster_bits;
    uint64_t nclu = ((uint64_t)img->ap_l1_size * 8 + cs - 1) / cs;
    uint64_t old_clu = ((uint64_t)img->ap_old_l1_size * 8 + cs - 1) / cs, j;
    int rc;
    if (!nclu) nclu = 1;
    switch (img->phase) {
    case Q2W__SNAP_APPLY_ALLOC_L1:
        if ((rc = q2w__zeroed_run(img, nclu)) != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_APPLY_COPY_L1;
        img->copy_done = 0;
        img->copy_read = 0;
        /* fall through */
    case Q2W__SNAP_APPLY_COPY_L1:
        /* every table it names now has a count of 2 or more: no COPIED */
        rc = q2w__copy_l1(img, img->sn_l1_off, img->run_start << cb,
                          (uint64_t)img->sn_l1_size * 8);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_APPLY_SWITCH_HEADER;
        return q2w__checkpoint_start(img);
    case Q2W__SNAP_APPLY_SWITCH_HEADER: {
        rc = q2w__switch_size_l1(img, img->op_arg, img->ap_l1_size);
        if (rc != Q2W_OK) return rc;
        img->ap_old_l1_off = img->l1_offset;
        img->ap_old_l1_size = img->l1_size;
        img->l1_offset = img->run_start << cb;
        img->l1_size = img->ap_l1_size;
        img->size = img->op_arg;
        img->phase = Q2W__SNAP_APPLY_DROP;
        img->pass_l1_index = img->pass_l2_step = 0;
        return Q2W_PENDING;
    }
    case Q2W__SNAP_APPLY_DROP:
        rc = q2w__pass(img, Q2W__PASS_DROP, img->ap_old_l1_off,
                       img->ap_old_l1_size, Q2W__K_L1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_APPLY_FREE_OLD_L1;
        /* fall through */
    case Q2W__SNAP_APPLY_FREE_OLD_L1:
        if ((rc = q2w__free_room(img)) != Q2W_OK) return rc;
        for (j = 0; j < old_clu; j++) q2w__drop(img, img->ap_old_l1_off + j * cs);
        if (old_clu && img->ap_old_l1_off)
            q2w__defer_free(img, img->ap_old_l1_off >> cb, old_clu);
        img->phase = Q2W__SNAP_APPLY_SET_COPIED;
        img->pass_l1_index = img->pass_l2_step = 0;
        /* fall through */
    case Q2W__SNAP_APPLY_SET_COPIED:
        rc = q2w__pass(img, Q2W__PASS_COPIED, img->l1_offset, img->l1_size,
                       Q2W__K_L1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__SNAP_APPLY_DONE;
        return q2w__checkpoint_start(img);
    default: /* Q2W__SNAP_APPLY_DONE */
        return Q2W__DONE;
    }
}

static int q2w__step_snap_apply(q2w_image *img)
{
    return img->phase < Q2W__SNAP_APPLY_ALLOC_L1 ? q2w__snap_apply_prepare(img)
                                                 : q2w__snap_apply_switch(img);
}

/* The size is switched. A backing file longer than the old size would show
 * through the new area, so that part is zeroed (as qemu does) by turning
 * the operation into a write_zeroes over it. */
static int q2w__resized(q2w_image *img)
{
    uint64_t old = img->size, end = img->op_arg;
    img->size = img->op_arg;
    if (!img->has_backing || img->backing_size <= old) return Q2W__DONE;
    if (end > img->backing_size) end = img->backing_size;
    img->op = Q2W__OP_ZEROES;
    img->op_off = old;
    img->op_len = end - old;
    img->op_pos = 0;   /* (a zeroes op keeps no phase) */
    return Q2W_OK;
}

/* Resize (grow), img->phase. A new L1 table: CHECK, VERIFY_BACKED_TABLES,
 * a checkpoint, ALLOC_L1 .. FREE_OLD_L1; the old one big enough: CHECK,
 * VERIFY_BACKED_TABLES, SWITCH_SIZE, SIZE_SWITCHED. */
enum {
    Q2W__RESIZE_CHECK,
    Q2W__RESIZE_VERIFY_BACKED_TABLES, /* the tables over backing data the
                                         new area will show */
    Q2W__RESIZE_ALLOC_L1,             /* a run of free clusters, zeroed */
    Q2W__RESIZE_COPY_L1,              /* then a checkpoint */
    Q2W__RESIZE_SWITCH_HEADER,        /* size and L1 in one write */
    Q2W__RESIZE_FREE_OLD_L1,
    Q2W__RESIZE_SWITCH_SIZE,          /* the size alone */
    Q2W__RESIZE_SIZE_SWITCHED
};

/* The new size checked, and the tables over the backing data it will show
 * verified: CHECK, VERIFY_BACKED_TABLES. span: virtual bytes per L1 entry;
 * need: L1 entries for the new size, in nclu clusters. */
static int q2w__resize_check(q2w_image *img, uint64_t span, uint64_t need,
                             uint64_t nclu)
{
    int rc;
    if (img->phase == Q2W__RESIZE_CHECK) {
        if (img->op_arg < img->size)
            return q2w__fail(img, Q2W_ERR_UNSUPPORTED, "shrinking", 24,
                             img->op_arg);
        if (img->op_arg > (1ull << 62) || need * 8 > Q2W_MAX_L1_BYTES)
            return q2w__fail(img, Q2W_ERR_LIMIT, "virtual size", 24,
                             img->op_arg);
        /* Backing data would show through the new area: it is zeroed
         * after the size switch, so the tables over it are verified
         * before (the zeroing must not meet a bad entry past the point
         * of no return). */
        img->pass_l1_index = img->size / span;
        img->pass_l2_step = 0;
        img->phase = Q2W__RESIZE_VERIFY_BACKED_TABLES;
    }
    if (img->has_backing && img->backing_size > img->size) {
        uint64_t end = img->op_arg < img->backing_size ? img->op_arg
                                                        : img->backing_size;
        uint64_t last = (end + span - 1) / span;
        if (last > img->l1_size) last = img->l1_size;
        rc = q2w__pass(img, Q2W__PASS_VERIFY, img->l1_offset,
                       (uint32_t)last, Q2W__K_L1);
        if (rc != Q2W_OK) return rc;
    }
    if (need <= img->l1_size) {
        img->phase = Q2W__RESIZE_SWITCH_SIZE;
        return Q2W_OK;
    }
    /* The new L1 is one run (see q2w__run_alloc): refuse up front. */
    if (nclu >= (1ull << q2w__epb_bits(img)))
        return q2w__fail(img, Q2W_ERR_LIMIT,
                         "table larger than one refcount block's range",
                         40, nclu);
    img->phase = Q2W__RESIZE_ALLOC_L1;
    q2w__run_begin(img);
    return q2w__checkpoint_start(img);
}

/* A new L1 table of need entries (nclu clusters) in place of the old one
 * (old_clu clusters): ALLOC_L1 .. FREE_OLD_L1. */
static int q2w__resize_new_l1(q2w_image *img, uint64_t need, uint64_t nclu,
                              uint64_t old_clu)
{
    uint64_t cs = img->cluster_size, cb = img->cluster_bits;
    int rc;
    switch (img->phase) {
    case Q2W__RESIZE_ALLOC_L1:
        if ((rc = q2w__zeroed_run(img, nclu)) != Q2W_OK) return rc;
        img->phase = Q2W__RESIZE_COPY_L1;
        img->copy_done = 0;
        /* fall through */
    case Q2W__RESIZE_COPY_L1:
        rc = q2w__copy(img, img->l1_offset, img->run_start << cb,
                       (uint64_t)img->l1_size * 8);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__RESIZE_SWITCH_HEADER;
        /* The new L1 and the refcounts of its clusters, durable first. */
        return q2w__checkpoint_start(img);
    case Q2W__RESIZE_SWITCH_HEADER: {
        rc = q2w__switch_size_l1(img, img->op_arg, (uint32_t)need);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__RESIZE_FREE_OLD_L1;
        return Q2W_PENDING;
    }
    default: { /* Q2W__RESIZE_FREE_OLD_L1 */
        uint64_t j, old = img->l1_offset;
        if ((rc = q2w__free_room(img)) != Q2W_OK) return rc;
        for (j = 0; j < old_clu; j++) q2w__drop(img, old + j * cs);
        if (old_clu) q2w__defer_free(img, old >> cb, old_clu);
        img->l1_offset = img->run_start << cb;
        img->l1_size = (uint32_t)need;
        return q2w__resized(img);
    }
    }
}

static int q2w__step_resize(q2w_image *img)
{
    uint64_t cs = img->cluster_size;
    uint64_t span = cs * q2w__l2_entries(img);
    uint64_t need = (img->op_arg + span - 1) / span;
    uint64_t nclu = (need * 8 + cs - 1) / cs;
    uint64_t old_clu = ((uint64_t)img->l1_size * 8 + cs - 1) / cs;
    int rc;
    switch (img->phase) {
    case Q2W__RESIZE_CHECK:
    case Q2W__RESIZE_VERIFY_BACKED_TABLES:
        return q2w__resize_check(img, span, need, nclu);
    case Q2W__RESIZE_ALLOC_L1:
    case Q2W__RESIZE_COPY_L1:
    case Q2W__RESIZE_SWITCH_HEADER:
    case Q2W__RESIZE_FREE_OLD_L1:
        return q2w__resize_new_l1(img, need, nclu, old_clu);
    case Q2W__RESIZE_SWITCH_SIZE: {
        unsigned char f[8];
        q2w__put64(f, img->op_arg);
        if ((rc = q2w__switch_header(img, 24, f, sizeof f)) != Q2W_OK) return rc;
        img->phase = Q2W__RESIZE_SIZE_SWITCHED;
        return Q2W_PENDING;
    }
    default: /* Q2W__RESIZE_SIZE_SWITCHED */
        return q2w__resized(img);
    }
}

/* ---- open ------------------------------------------------------------------- */
static int q2w__carve(q2w_image *img)
{
    uintptr_t base = (uintptr_t)img->mem, p;
    size_t meta, per, n, cz, frees = img->cap_frees ? img->cap_frees : 64;
    uint64_t cs = img->cluster_size;
    p = (base + 7u) & ~(uintptr_t)7u;
    meta = (size_t)(p - base) + frees * sizeof(q2w__free);
    per = (size_t)cs + sizeof(q2w__slot);
    /* Two clusters for reading compressed clusters when the memory holds
     * them beside the minimum of slots; otherwise such a read is NOMEM. */
    cz = 2 * (size_t)cs;
    n = img->mem_len > meta + cs + cz
            ? (img->mem_len - meta - (size_t)cs - cz) / per : 0;
    if (n < Q2W_MIN_SLOTS) {
        cz = 0;
        n = img->mem_len > meta + cs ? (img->mem_len - meta - (size_t)cs) / per
                                     : 0;
    }
    if (img->max_slots && n > img->max_slots) n = img->max_slots;
    if (n < Q2W_MIN_SLOTS) {
        q2w__fail(img, Q2W_ERR_NOMEM, "cfg.mem", 0, 0);
        img->err.needed = q2w__mem_floor(img, frees, 0);
        return Q2W_ERR_NOMEM;
    }
    /* free list, scratch, slot clusters; the slot table goes at the very
     * end, so a read past it leaves the caller's memory (and a checker
     * like ASan sees it) instead of landing in scratch */
    img->frees = (q2w__free *)p;
    img->cap_frees = frees;
    img->scratch = (unsigned char *)(p + frees * sizeof(q2w__free));
    img->czbuf = cz ? img->scratch + cs : NULL;
    img->slot_mem = img->scratch + cs + cz;
    img->slots = (q2w__slot *)((base + img->mem_len - n * sizeof(q2w__slot)) &
                               ~(uintptr_t)7u);
    img->n_slots = n;
    memset(img->slots, 0, n * sizeof(q2w__slot));
    return Q2W_OK;
}

static void q2w__copy_hdr(q2w_image *img, const q2w__hdr *h)
{
    img->version = h->version;
    img->cluster_bits = h->cluster_bits;
    img->cluster_size = 1ull << h->cluster_bits;
    img->refcount_order = h->refcount_order;
    img->header_length = h->header_length;
    img->compression_type = h->compression_type;
    img->size = h->size;
    img->l1_offset = h->l1_offset;
    img->l1_size = h->l1_size;
    img->rt_offset = h->rt_offset;
    img->rt_clusters = h->rt_clusters;
    img->snapshots_offset = h->snapshots_offset;
    img->nb_snapshots = h->nb_snapshots;
    img->incompatible = h->incompatible;
    img->compatible = h->compatible;
    img->autoclear = h->autoclear;
    img->backing_offset = h->backing_offset;
    img->backing_len = h->backing_len;
}

/* Open, img->phase in order. */
enum {
    Q2W__OPEN_READ_HEADER,         /* the fixed part */
    Q2W__OPEN_READ_FIRST_CLUSTER,  /* header, extensions, backing name */
    Q2W__OPEN_PARSE_FIRST_CLUSTER,
    Q2W__OPEN_WALK_SNAPSHOTS
};

static int q2w__step_open(q2w_image *img)
{
    q2w__hdr h;
    int rc;
    if (img->phase == Q2W__OPEN_WALK_SNAPSHOTS) return q2w__step_open_snapshots(img);
    switch (img->phase) {
    case Q2W__OPEN_READ_HEADER:
        q2w__emit(img, Q2W_OP_READ, 0, sizeof img->head, img->head, NULL);
        img->phase = Q2W__OPEN_READ_FIRST_CLUSTER;
        return Q2W_PENDING;
    case Q2W__OPEN_READ_FIRST_CLUSTER:
        rc = q2w__parse_fixed(img->head, sizeof img->head, &h, &img->err);
        if (rc != Q2W_OK) return rc;
        q2w__copy_hdr(img, &h);
        if ((rc = q2w__carve(img)) != Q2W_OK) return rc;
        q2w__emit(img, Q2W_OP_READ, 0, (size_t)img->cluster_size,
                  img->scratch, NULL);
        img->phase = Q2W__OPEN_PARSE_FIRST_CLUSTER;
        return Q2W_PENDING;
    default: /* Q2W__OPEN_PARSE_FIRST_CLUSTER */
        rc = q2w__parse_fixed(img->scratch, (size_t)img->cluster_size, &h,
                              &img->err);
        if (rc == Q2W_OK)
            rc = q2w__parse_exts(img->scratch, (size_t)img->cluster_size, &h,
                                 &img->err);
        if (rc != Q2W_OK) return rc;
        if (h.l1_size != img->l1_size || h.rt_offset != img->rt_offset)
            return q2w__fail(img, Q2W_ERR_HEADER, "header changed while open",
                             0, 0);
        if (h.backing_offset) {
            memcpy(img->backing_name, img->scratch + h.backing_offset,
                   h.backing_len);
            img->backing_name[h.backing_len] = 0;
            img->has_backing_name = 1;
        }
        img->bm_ext = h.bm_ext_pos != 0;
        if (h.backing_fmt) {
            memcpy(img->backing_fmt, h.backing_fmt, h.backing_fmt_len);
            img->backing_fmt[h.backing_fmt_len] = 0;
        }
        if (img->writable && (img->incompatible & Q2W__INCOMPAT_CORRUPT))
            return q2w__fail(img, Q2W_ERR_CORRUPT,
                             "header.incompatible_features", 72,
                             img->incompatible);
        if (img->writable && (img->incompatible & Q2W__INCOMPAT_DIRTY))
            return q2w__fail(img, Q2W_ERR_DIRTY, "header.incompatible_features",
                             72, img->incompatible);
        if (img->has_backing_name && !img->has_backing && !img->no_backing_ok)
            return q2w__fail(img, Q2W_ERR_BACKING, "header.backing_file_offset",
                             8, 0);
        if (!img->has_backing_name) img->has_backing = 0;
        if (!img->nb_snapshots) return Q2W__DONE;
        img->phase = Q2W__OPEN_WALK_SNAPSHOTS;
        q2w__walk_begin(img);
        return Q2W_OK;
    }
}

/* ---- the backing file named in the header (q2w_set_backing) -------------- */
/* img->phase in order: everything before made durable, then cluster 0
 * read, rewritten in one write and flushed (q2w__header_rewrite). */
enum {
    Q2W__SB_CHECKPOINT,
    Q2W__SB_REWRITE
};

/* Cluster 0 read into scratch, made over by compose (the bytes to write,
 * or 0 with the error set), written in one write and flushed; hdr_step
 * from 0 counts the calls: Q2W__DONE once the write has run. */
static int q2w__header_rewrite(q2w_image *img, size_t (*compose)(q2w_image *))
{
    size_t n;
    int rc;
    if (img->hdr_step == 0) {
        if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
        q2w__emit(img, Q2W_OP_READ, 0, (size_t)img->cluster_size, img->scratch, NULL);
        img->hdr_step = 1;
        return Q2W_PENDING;
    }
    if (img->hdr_step == 1) {
        if ((rc = q2w__need_room(img, 3)) != Q2W_OK) return rc;
        if (!(n = compose(img))) return img->err.code;
        if (img->writes_since_flush) q2w__emit(img, Q2W_OP_FLUSH, 0, 0, NULL, NULL);
        q2w__emit(img, Q2W_OP_WRITE, 0, n, NULL, img->scratch);
        q2w__emit(img, Q2W_OP_FLUSH, 0, 0, NULL, NULL);
        img->hdr_step = 2;
        return Q2W_PENDING;
    }
    return Q2W__DONE;
}

/* Cluster 0 in scratch with the backing format extension and the name
 * replaced (the other extensions kept, in order): the bytes to write, or
 * 0 with the error set when the new name does not fit. */
static size_t q2w__sb_compose(q2w_image *img)
{
    unsigned char *p = img->scratch;
    size_t cs = (size_t)img->cluster_size, pos = img->header_length;
    size_t end = img->backing_offset ? (size_t)img->backing_offset : cs;
    size_t old_end = img->backing_offset ? end + img->backing_len : end;
    size_t nl = img->sb_name ? strlen(img->sb_name) : 0;
    size_t fl = img->sb_fmt ? strlen(img->sb_fmt) : 0, need;
    /* the extensions as open parsed them: walk to the end marker, taking
     * the backing format extension out */
    while (pos + 8 <= end) {
        uint32_t type = q2w__be32(p + pos);
        size_t ext = 8 + (((size_t)q2w__be32(p + pos + 4) + 7u) & ~(size_t)7u);
        if (type == 0) break;
        if (type == Q2W__EXT_BACKING_FMT) {
            memmove(p + pos, p + pos + ext, end - pos - ext);
            end -= ext;
            continue;
        }
        pos += ext;
    }
    need = pos + (fl ? 8 + ((fl + 7u) & ~(size_t)7u) : 0) + 8 + nl;
    if (need > cs) {
        q2w__fail(img, Q2W_ERR_LIMIT, "backing name does not fit in cluster 0", 0,
                  need);
        return 0;
    }
    memset(p + pos, 0, cs - pos);
    if (fl) {
        q2w__put32(p + pos, Q2W__EXT_BACKING_FMT);
        q2w__put32(p + pos + 4, (uint32_t)fl);
        memcpy(p + pos + 8, img->sb_fmt, fl);
        pos += 8 + ((fl + 7u) & ~(size_t)7u);
    }
    pos += 8; /* the end marker: type 0, length 0 */
    memcpy(p + pos, img->sb_name ? img->sb_name : "", nl);
    q2w__put64(p + 8, nl ? pos : 0);
    q2w__put32(p + 16, (uint32_t)nl);
    /* the header as the image has it now (a resize or snapshot since
     * open switched fields that scratch was read after: it is current) */
    img->backing_offset = nl ? pos : 0;
    img->backing_len = (uint32_t)nl;
    img->has_backing_name = nl != 0;
    memcpy(img->backing_name, img->sb_name ? img->sb_name : "", nl + 1);
    memcpy(img->backing_fmt, img->sb_fmt ? img->sb_fmt : "", fl + 1);
    return pos + nl > old_end ? pos + nl : old_end;
}

static int q2w__step_set_backing(q2w_image *img)
{
    int rc;
    switch (img->phase) {
    case Q2W__SB_CHECKPOINT:
        img->phase = Q2W__SB_REWRITE;
        img->hdr_step = 0;
        return q2w__checkpoint_start(img);
    default: /* Q2W__SB_REWRITE */
        if ((rc = q2w__header_rewrite(img, q2w__sb_compose)) != Q2W__DONE) return rc;
        img->has_backing = img->has_backing_name;
        img->backing_size = img->has_backing ? img->op_arg : 0;
        return Q2W__DONE;
    }
}

/* ---- compat amend (qemu-img amend -o compat=) ------------------------------ */
/* The step of an EXPAND pass on entry `entry` of the L2 table l2 (at
 * l2off, pass_l2_rc paths through it): a zero flag - which a v2 image has
 * no bit for - becomes a cluster of zeros over a backing file (a new one,
 * counted once per path, written before the entry names it: the
 * checkpoint orders them), or unallocated without one; a cluster the flag
 * kept (qemu's ZERO_ALLOC) loses those paths once the entry is durable.
 * The view is the same before and after, so a crash anywhere leaks only. */
static int q2w__expand_entry(q2w_image *img, unsigned char *l2, uint64_t l2off,
                             uint64_t entry)
{
    unsigned char *ep = l2 + entry * 8;
    uint64_t e = q2w__be64(ep), host = e & Q2W__OFF_MASK, k = img->pass_l2_rc;
    uint64_t c = 0, j, v;
    int rc;
    if ((e & Q2W__COMPRESSED) || !(e & Q2W__ZERO)) {
        img->pass_l2_step++;
        return Q2W_OK;
    }
    if (host && img->n_frees + k > img->cap_frees) {
        if (k > img->cap_frees)
            return q2w__fail(img, Q2W_ERR_LIMIT, "L2 table shared by too many tables",
                             l2off, k);
        return q2w__checkpoint_start(img);
    }
    if (img->has_backing_name) {
        if (k > q2w__rc_max(img->refcount_order))
            return q2w__fail(img, Q2W_ERR_LIMIT, "refcount would overflow", l2off, k);
        rc = q2w__find_free(img, &img->free_hint, &c);
        if (rc != Q2W_OK) return rc;
        if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
        q2w__take(img, c);
        for (j = 1; j < k; j++) {
            rc = q2w__rc_add(img, c, 1, &v);
            QCOW2W_ASSERT(rc == Q2W_OK);
        }
        q2w__emit(img, Q2W_OP_WRITE, c << img->cluster_bits,
                  (size_t)img->cluster_size, NULL, NULL);
    }
    q2w__put64(ep, c ? c << img->cluster_bits | (k == 1 ? Q2W__COPIED : 0) : 0);
    q2w__mark_dirty(img, l2);
    if (host)
        for (j = 0; j < k; j++) q2w__defer_free(img, host >> img->cluster_bits, 1);
    img->pass_l2_step++;
    return Q2W_OK;
}

/* img->phase in order. Downgrade: checks, the zero flags expanded in the
 * active tables and every snapshot's, then cluster 0 rewritten as a v2
 * header; upgrade: checks, then cluster 0 rewritten as a v3 header. */
enum {
    Q2W__AM_CHECK,
    Q2W__AM_CHECK_SNAPSHOTS,
    Q2W__AM_EXPAND_ACTIVE,
    Q2W__AM_EXPAND_NEXT,
    Q2W__AM_EXPAND_SNAPSHOT,
    Q2W__AM_TABLE_ALLOC,       /* v3: a table whose entries all record */
    Q2W__AM_TABLE_COPY,        /* the disk size (sn_new_off, sn_len) */
    Q2W__AM_CHECKPOINT,
    Q2W__AM_REWRITE            /* cluster 0 (q2w__header_rewrite), then
                                  the old table freed */
};

/* Cluster 0 (in scratch, current) as a version op_arg header: the fixed
 * part (v3: no feature bits, 16-bit refcounts, zlib, 112 bytes), the
 * extensions kept in order (the feature name table dropped for v2), the
 * end marker, the backing file name. The bytes to write (covering the old
 * layout's), or 0 with the error set when it does not fit. */
static size_t q2w__am_compose(q2w_image *img)
{
    unsigned char *p = img->scratch;
    size_t cs = (size_t)img->cluster_size, pos = img->header_length;
    size_t end = img->backing_offset ? (size_t)img->backing_offset : cs;
    size_t old_end, nl = img->backing_len, nh = img->op_arg == 3 ? 112u : 72u;
    size_t ext_len, need;
    while (pos + 8 <= end) {
        uint32_t type = q2w__be32(p + pos);
        size_t ext = 8 + (((size_t)q2w__be32(p + pos + 4) + 7u) & ~(size_t)7u);
        if (type == 0) break;
        if (type == Q2W__EXT_FEATURES && img->op_arg == 2) {
            memmove(p + pos, p + pos + ext, end - pos - ext);
            end -= ext;
            continue;
        }
        pos += ext;
    }
    old_end = img->backing_offset ? (size_t)img->backing_offset + nl : pos + 8;
    if (old_end > cs) old_end = cs;
    ext_len = pos - img->header_length;
    need = nh + ext_len + 8 + nl;
    if (need > cs) {
        q2w__fail(img, Q2W_ERR_LIMIT, "header does not fit in cluster 0", 0, need);
        return 0;
    }
    memmove(p + nh, p + img->header_length, ext_len);
    memset(p + nh + ext_len, 0, cs - nh - ext_len);
    q2w__put32(p + 4, (uint32_t)img->op_arg);
    if (nh == 112) {
        memset(p + 72, 0, 40);
        q2w__put32(p + 96, 4);
        q2w__put32(p + 100, 112);
    }
    memcpy(p + nh + ext_len + 8, img->backing_name, nl);
    q2w__put64(p + 8, nl ? nh + ext_len + 8 : 0);
    q2w__put32(p + 16, (uint32_t)nl);
    if (img->sn_new_off) q2w__put64(p + 64, img->sn_new_off);
    img->backing_offset = nl ? nh + ext_len + 8 : 0;
    return need > old_end ? need : old_end;
}

/* A snapshot entry e (len bytes, extra bytes of extra data) as v3 needs
 * it, into snapbuf: under 16 bytes of extra data, the 24 qemu writes (the
 * VM state size, the disk size - the current one, as qemu reads it - and
 * an unknown instruction count); else as it is. Its new length, or 0 when
 * it does not fit snapbuf (then Q2W_ERR_LIMIT). */
static uint64_t q2w__am_entry(q2w_image *img, const unsigned char *e, uint64_t len)
{
    uint32_t extra = q2w__be32(e + 36);
    uint64_t idn = (uint64_t)q2w__be16(e + 12) + q2w__be16(e + 14);
    uint64_t nlen = extra < 16 ? (64 + idn + 7) & ~7ull : len;
    unsigned char *b = img->snapbuf;
    if (nlen > sizeof img->snapbuf) {
        q2w__fail(img, Q2W_ERR_LIMIT, "snapshot entry too long to rewrite",
                  img->snapshots_offset + img->walk_pos - len, img->walk_index - 1);
        return 0;
    }
    if (extra >= 16) {
        memcpy(b, e, (size_t)len);
        return len;
    }
    memset(b, 0, (size_t)nlen);
    memcpy(b, e, 36);
    q2w__put32(b + 36, 24);
    q2w__put64(b + 40, extra >= 8 ? q2w__be64(e + 40) : q2w__be32(e + 32));
    q2w__put64(b + 48, img->size);
    q2w__put64(b + 56, ~0ull);
    memcpy(b + 64, e + 40 + extra, (size_t)idn);
    return nlen;
}

/* What the version change refuses, on the header and each snapshot entry
 * (e, extra bytes of extra data): CHECK, CHECK_SNAPSHOTS; for v3, the
 * length of the table as it needs it (sn_len) and whether that is another
 * table (sn_new_off 1 until it is placed). */
static int q2w__am_check(q2w_image *img)
{
    for (;;) {
        const unsigned char *e;
        uint64_t len, vm;
        uint32_t extra;
        int rc = q2w__snap_next(img, &e, &len);
        if (rc == Q2W__DONE) return Q2W__DONE;
        if (rc != Q2W_OK) return rc;
        extra = q2w__be32(e + 36);
        vm = extra >= 8 ? q2w__be64(e + 40) : q2w__be32(e + 32);
        if (img->op_arg == 3) {
            uint64_t n = q2w__am_entry(img, e, len);
            if (!n) return img->err.code;
            img->sn_len += n;
            if (extra < 16) img->sn_new_off = 1;
        }
        /* as qemu: a v2 reader would not know these fields matter */
        if (img->op_arg == 2 &&
            ((extra >= 16 && q2w__be64(e + 48) != img->size) || vm > 0xffffffffu))
            return q2w__fail(img, Q2W_ERR_UNSUPPORTED,
                             "snapshot of another disk size or a large VM state",
                             img->snapshots_offset + img->walk_pos - len,
                             img->walk_index - 1);
    }
}

static int q2w__step_amend(q2w_image *img)
{
    int rc;
    switch (img->phase) {
    case Q2W__AM_CHECK:
        if ((uint64_t)img->version == img->op_arg) return Q2W__DONE;
        if (img->op_arg == 2 && img->refcount_order != 4)
            return q2w__fail(img, Q2W_ERR_UNSUPPORTED,
                             "v2 needs 16-bit refcounts", 96, 1u << img->refcount_order);
        if (img->op_arg == 2 && img->compression_type != 0)
            return q2w__fail(img, Q2W_ERR_UNSUPPORTED, "v2 has no compression type",
                             104, img->compression_type);
        if (img->op_arg == 2 && img->bm_ext)
            return q2w__fail(img, Q2W_ERR_UNSUPPORTED, "persistent bitmaps", 0, 0);
        q2w__walk_begin(img);
        img->sn_len = img->sn_new_off = 0;
        img->phase = Q2W__AM_CHECK_SNAPSHOTS;
        /* fall through */
    case Q2W__AM_CHECK_SNAPSHOTS:
        if ((rc = q2w__am_check(img)) != Q2W__DONE) return rc;
        img->phase = img->op_arg == 2 ? Q2W__AM_EXPAND_ACTIVE
                     : img->sn_new_off ? Q2W__AM_TABLE_ALLOC : Q2W__AM_CHECKPOINT;
        q2w__run_begin(img);
        img->pass_l1_index = img->pass_l2_step = 0;
        /* the frees pending applied first: an L2 table's refcount is then
         * its number of paths (a new cluster of zeros gets that many) */
        return img->op_arg == 2 ? q2w__checkpoint_start(img) : Q2W_OK;
    case Q2W__AM_EXPAND_ACTIVE:
        rc = q2w__pass(img, Q2W__PASS_EXPAND, img->l1_offset, img->l1_size, Q2W__K_L1);
        if (rc != Q2W_OK) return rc;
        q2w__walk_begin(img);
        img->phase = Q2W__AM_EXPAND_NEXT;
        /* fall through */
    case Q2W__AM_EXPAND_NEXT: {
        const unsigned char *e;
        uint64_t len;
        rc = q2w__snap_next(img, &e, &len);
        if (rc == Q2W__DONE) {
            img->phase = Q2W__AM_CHECKPOINT;
            return Q2W_OK;
        }
        if (rc != Q2W_OK) return rc;
        img->sn_l1_off = q2w__be64(e);
        img->sn_l1_size = q2w__be32(e + 8);
        img->pass_l1_index = img->pass_l2_step = 0;
        img->phase = Q2W__AM_EXPAND_SNAPSHOT;
    }
        /* fall through */
    case Q2W__AM_EXPAND_SNAPSHOT:
        rc = q2w__pass(img, Q2W__PASS_EXPAND, img->sn_l1_off, img->sn_l1_size,
                       Q2W__K_SL1);
        if (rc != Q2W_OK) return rc;
        img->phase = Q2W__AM_EXPAND_NEXT;
        return Q2W_OK;
    case Q2W__AM_TABLE_ALLOC:
        rc = q2w__run_alloc(img, (img->sn_len + img->cluster_size - 1) /
                                     img->cluster_size);
        if (rc != Q2W_OK) return rc;
        img->sn_new_off = img->run_start << img->cluster_bits;
        img->copy_done = 0;
        q2w__walk_begin(img);
        img->phase = Q2W__AM_TABLE_COPY;
        /* fall through */
    case Q2W__AM_TABLE_COPY: {
        /* an entry a batch: snapbuf holds it until the write has run */
        const unsigned char *e;
        uint64_t len, elen;
        rc = q2w__snap_next(img, &e, &len);
        if (rc == Q2W__DONE) {
            img->phase = Q2W__AM_CHECKPOINT;
            return Q2W_OK;
        }
        if (rc != Q2W_OK) return rc;
        if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
        if (!(elen = q2w__am_entry(img, e, len))) return img->err.code;
        q2w__emit(img, Q2W_OP_WRITE, img->sn_new_off + img->copy_done, (size_t)elen,
                  NULL, img->snapbuf);
        img->copy_done += elen;
        return Q2W_PENDING;
    }
    case Q2W__AM_CHECKPOINT:
        /* the expanded tables (or the new snapshot table) durable before
         * the header names them */
        img->phase = Q2W__AM_REWRITE;
        img->hdr_step = 0;
        return q2w__checkpoint_start(img);
    default: /* Q2W__AM_REWRITE */
        if ((rc = q2w__header_rewrite(img, q2w__am_compose)) != Q2W__DONE) return rc;
        if (img->sn_new_off) {
            uint64_t cs = img->cluster_size, old = (img->snap_len + cs - 1) / cs;
            if ((rc = q2w__free_room(img)) != Q2W_OK) return rc;
            if (old) q2w__defer_free(img, img->snapshots_offset >> img->cluster_bits, old);
            img->snapshots_offset = img->sn_new_off;
            img->snap_len = img->sn_len;
            img->sn_new_off = 0;
        }
        img->version = (int)img->op_arg;
        img->header_length = img->op_arg == 3 ? 112u : 72u;
        img->incompatible = img->compatible = img->autoclear = 0;
        return Q2W__DONE;
    }
}

/* ---- compressed cluster writes (q2w_write_compressed) ----------------------- */
enum { Q2W__CW_COMPRESS, Q2W__CW_PLACE };

/* The stream (cw_len bytes at cw_work + Q2W_DEFLATE_WORK + cs) placed as
 * qemu places one: right after the last stream, in the same host cluster
 * and the next one when it runs over (that one free), else at the start of
 * a free cluster; +1 on the refcount of each cluster it touches; the L2
 * entry a compressed descriptor. The target must not be allocated. */
static int q2w__cw_place(q2w_image *img)
{
    uint64_t cs = img->cluster_size, vc = img->op_off >> img->cluster_bits;
    uint64_t idx = vc & (q2w__l2_entries(img) - 1), l2off, e, off, c0 = 0, c1 = 0, v, now;
    uint64_t n = img->cw_len, nsec;
    unsigned char *l2, *out = img->cw_work + Q2W_DEFLATE_WORK + cs;
    int rc, fresh = 1, second = 0;
    rc = q2w__l2_for(img, vc, 1, &l2, &l2off);
    if (rc != Q2W_OK) return rc;
    e = q2w__be64(l2 + idx * 8);
    if (e != 0 && e != Q2W__ZERO)
        return q2w__fail(img, Q2W_ERR_UNSUPPORTED,
                         "compressed write over an allocated cluster", l2off + idx * 8, idx);
    off = img->cw_next;
    if (off && (off & (cs - 1))) {
        /* the last stream's cluster, while its count has room */
        c0 = off >> img->cluster_bits;
        if ((rc = q2w__refcount(img, c0, &v)) != Q2W_OK) return rc;
        if (v > 0 && v < q2w__rc_max(img->refcount_order)) {
            fresh = 0;
            if ((off & (cs - 1)) + n > cs) {
                /* runs over: the next cluster must be free */
                uint64_t cur = c0 + 1;
                if ((rc = q2w__find_free(img, &cur, &c1)) != Q2W_OK) return rc;
                if (c1 == c0 + 1) second = 1;
                else fresh = 1;
            }
        }
    }
    if (fresh) {
        if ((rc = q2w__find_free(img, &img->free_hint, &c1)) != Q2W_OK) return rc;
        off = c1 << img->cluster_bits;
        second = 1;
    }
    if ((rc = q2w__free_room(img)) != Q2W_OK) return rc;
    if ((rc = q2w__need_room(img, 1)) != Q2W_OK) return rc;
    /* committed from here: nothing below can be refused */
    if (!fresh && (rc = q2w__rc_add(img, c0, 1, &now)) != Q2W_OK) return rc;
    if (second) q2w__take(img, c1);
    q2w__emit(img, Q2W_OP_WRITE, off, (size_t)n, NULL, out);
    nsec = ((off + n - 1) >> 9) - (off >> 9);
    q2w__put64(l2 + idx * 8, Q2W__COMPRESSED | (nsec << (62u - (img->cluster_bits - 8u))) | off);
    q2w__mark_dirty(img, l2);
    img->cw_next = (off + n) & (cs - 1) ? off + n : 0;
    img->cz_state = 0;
    return Q2W__DONE;
}

static int q2w__step_write_cz(q2w_image *img)
{
    uint64_t cs = img->cluster_size;
    unsigned char *in = img->cw_work + Q2W_DEFLATE_WORK, *out = in + cs;
    if (img->phase == Q2W__CW_PLACE) return q2w__cw_place(img);
    /* the cluster's bytes (a short last one padded with zeros), compressed
     * to less than a cluster or written as they are, as qemu does */
    memcpy(in, img->op_src, (size_t)img->op_len);
    memset(in + img->op_len, 0, (size_t)(cs - img->op_len));
    img->cw_len = q2w_deflate(in, (size_t)cs, out, (size_t)cs - 1, img->cw_work);
    if (img->cw_len == 0) {
        img->op = Q2W__OP_WRITE;
        img->op_pos = 0;
        return Q2W_OK;
    }
    img->phase = Q2W__CW_PLACE;
    return Q2W_OK;
}

/* ---- the driver ------------------------------------------------------------- */
/* Flush and close, img->phase. */
enum { Q2W__FLUSH_CHECKPOINT, Q2W__FLUSH_DONE };
enum {
    Q2W__CLOSE_CHECKPOINT,
    Q2W__CLOSE_CHECKPOINT_AFTER_FREES,  /* the driver applied the frees the
                                           first one made safe */
    Q2W__CLOSE_DONE
};

static int q2w__op_step(q2w_image *img)
{
    uint64_t cs = img->cluster_size;
    switch (img->op) {
    case Q2W__OP_OPEN:
        return q2w__step_open(img);
    case Q2W__OP_READ:
        if (img->op_pos >= img->op_len) return Q2W__DONE;
        return q2w__step_read(img);
    case Q2W__OP_WRITE:
        if (img->op_pos >= img->op_len) return Q2W__DONE;
        return q2w__step_write(img, img->op_src);
    case Q2W__OP_ZEROES:
    case Q2W__OP_DISCARD: {
        uint64_t voff = img->op_off + img->op_pos;
        uint64_t left = img->op_len - img->op_pos;
        int v3 = img->version == 3;
        if (img->op_pos >= img->op_len) return Q2W__DONE;
        /* As qemu: discard on a v2 image with a backing file does nothing
         * (unmapping would expose the backing file's data). */
        if (img->op == Q2W__OP_DISCARD && !v3 && img->has_backing_name)
            return Q2W__DONE;
        /* Whole clusters, and the partial last cluster of the disk when
         * the range runs to the end. */
        if ((voff & (cs - 1)) == 0 &&
            (left >= cs || voff + left == img->size)) {
            if (img->op == Q2W__OP_ZEROES && !v3) return q2w__step_write(img, NULL);
            return q2w__step_unmap(img, v3);
        }
        /* Partial clusters: explicit zeros, or nothing for a discard. */
        if (img->op == Q2W__OP_ZEROES) return q2w__step_write(img, NULL);
        {
            uint64_t n = cs - (voff & (cs - 1));
            img->op_pos += n < left ? n : left;
        }
        return Q2W_OK;
    }
    case Q2W__OP_FLUSH:
        if (img->phase == Q2W__FLUSH_CHECKPOINT) {
            img->phase = Q2W__FLUSH_DONE;
            return q2w__checkpoint_start(img);
        }
        return Q2W__DONE;
    case Q2W__OP_CLOSE:
        /* Checkpoint, frees applied by the driver, checkpoint again. */
        if (img->phase == Q2W__CLOSE_CHECKPOINT) {
            img->phase = Q2W__CLOSE_CHECKPOINT_AFTER_FREES;
            return q2w__checkpoint_start(img);
        }
        if (img->phase == Q2W__CLOSE_CHECKPOINT_AFTER_FREES) {
            img->phase = Q2W__CLOSE_DONE;
            return q2w__checkpoint_start(img);
        }
        return Q2W__DONE;
    case Q2W__OP_RESIZE:
        return q2w__step_resize(img);
    case Q2W__OP_SNAP_GET:
        return q2w__step_snap_get(img);
    case Q2W__OP_SNAP_CREATE:
        return q2w__step_snap_create(img);
    case Q2W__OP_SNAP_DELETE:
        return q2w__step_snap_delete(img);
    case Q2W__OP_SNAP_APPLY:
        return q2w__step_snap_apply(img);
    case Q2W__OP_AMEND:
        return q2w__step_amend(img);
    case Q2W__OP_SNAP_READ:
        if (img->op_pos >= img->op_len) return Q2W__DONE;
        return q2w__step_read(img);
    case Q2W__OP_MAP:
    case Q2W__OP_SNAP_MAP:
        if (img->op_pos >= img->op_len) return Q2W__DONE;
        return q2w__step_map(img);
    case Q2W__OP_EMPTY:
        /* every active path dropped: the clusters read from the backing
         * file again (zeros without one), as qemu's make_empty */
        if (img->op_pos >= img->op_len) return Q2W__DONE;
        return q2w__step_unmap(img, 0);
    case Q2W__OP_SET_BACKING:
        return q2w__step_set_backing(img);
    case Q2W__OP_WRITE_CZ:
        return q2w__step_write_cz(img);
    default:
        return Q2W__DONE;
    }
}

static int q2w__is_change(int op)
{
    return op == Q2W__OP_WRITE || op == Q2W__OP_ZEROES ||
           op == Q2W__OP_DISCARD || op == Q2W__OP_RESIZE ||
           op == Q2W__OP_SNAP_CREATE || op == Q2W__OP_SNAP_DELETE ||
           op == Q2W__OP_EMPTY || op == Q2W__OP_SET_BACKING ||
           op == Q2W__OP_WRITE_CZ || op == Q2W__OP_SNAP_APPLY ||
           op == Q2W__OP_AMEND;
}

static int q2w__finish(q2w_image *img, int rc)
{
    if (img->op == Q2W__OP_CLOSE && rc == Q2W_OK) img->failed = 2;
    if (img->op == Q2W__OP_OPEN && rc == Q2W_OK) img->opened = 1;
    img->op = Q2W__OP_NONE;
    if (rc < 0 && img->n_ops) {
        /* The planned ops must still run (reads into slots, data whose
         * metadata is cached): the error comes after the batch. */
        img->deferred_err = rc;
        img->deferred_info = img->err;
        return Q2W_PENDING;
    }
    if (rc == Q2W_OK && img->n_ops) return Q2W_PENDING;
    return rc;
}

static int q2w__drive(q2w_image *img)
{
    for (;;) {
        int rc;
        if (img->ckpt_phase != Q2W__CKPT_IDLE) {
            rc = q2w__checkpoint_run(img);
            if (rc == Q2W_PENDING) return rc;
            continue;
        }
        if (img->n_safe_frees) {
            rc = q2w__apply_frees(img);
        } else if (img->sub == Q2W__SUB_GROW_RT) {
            img->pin_epoch++;
            rc = q2w__grow_rt_run(img);
        } else {
            if (q2w__is_change(img->op) && !img->prepared) {
                /* Autoclear bits we do not maintain are cleared, durably,
                 * before the first change. */
                if (img->version == 3 && img->autoclear) {
                    if (q2w__room(img) < 2) return Q2W_PENDING;
                    q2w__emit(img, Q2W_OP_WRITE, 88, 8, NULL, NULL);
                    q2w__emit(img, Q2W_OP_FLUSH, 0, 0, NULL, NULL);
                    img->autoclear = 0;
                }
                img->prepared = 1;
            }
            img->pin_epoch++;
            rc = q2w__op_step(img);
            if (rc == Q2W__DONE) return q2w__finish(img, Q2W_OK);
        }
        if (rc == Q2W_PENDING) {
            QCOW2W_ASSERT(img->n_ops > 0);
            return rc;
        }
        if (rc < 0) return q2w__finish(img, rc);
    }
}

Q2WDEF int q2w_resume(q2w_image *img, int io_rc)
{
    size_t i;
    if (!img) return Q2W_ERR_ARG;
    if (img->failed == 1) return Q2W_ERR_FAILED;
    if (img->failed == 2) return Q2W_ERR_ARG;
    if (img->cz_state == 1) img->cz_state = io_rc < 0 ? 0 : 2;
    if (io_rc < 0) {
        img->failed = 1;
        img->n_ops = 0;
        img->op = Q2W__OP_NONE;
        return q2w__fail(img, Q2W_ERR_IO, "executor", 0, 0);
    }
    img->n_ops = 0;
    for (i = 0; i < img->n_slots; i++)
        if (img->slots[i].state == Q2W__S_LOADING)
            img->slots[i].state = Q2W__S_VALID;
    if (img->deferred_err) {
        int rc = img->deferred_err;
        img->deferred_err = 0;
        img->err = img->deferred_info;   /* (a BUSY refusal came between) */
        return rc;
    }
    if (img->op == Q2W__OP_NONE && img->ckpt_phase == Q2W__CKPT_IDLE &&
        !img->sub)
        return Q2W_OK;
    return q2w__drive(img);
}

static int q2w__begin(q2w_image *img, int op, uint64_t off, uint64_t len)
{
    if (!img) return Q2W_ERR_ARG;
    if (img->failed == 1) return Q2W_ERR_FAILED;
    if (img->failed == 2 || !img->opened)
        return q2w__fail(img, Q2W_ERR_ARG, "image not open", 0, 0);
    if (img->op != Q2W__OP_NONE || img->n_ops ||
        img->ckpt_phase != Q2W__CKPT_IDLE || img->sub)
        return q2w__fail(img, Q2W_ERR_BUSY, "operation", 0, 0);
    if (q2w__is_change(op) && !img->writable)
        return q2w__fail(img, Q2W_ERR_READONLY, "operation", 0, 0);
    if (op != Q2W__OP_RESIZE && op != Q2W__OP_SNAP_READ &&
        op != Q2W__OP_SNAP_MAP && (off > img->size || len > img->size - off))
        return q2w__fail(img, Q2W_ERR_RANGE, "virtual range", off, len);
    img->op = op;
    img->op_off = off;
    img->op_len = len;
    img->op_pos = 0;
    img->phase = 0;      /* the first phase in every step's enum */
    /* a change other than a compressed write may free the cluster the
     * last stream went into: the next stream starts a cluster of its own */
    if (q2w__is_change(op) && op != Q2W__OP_WRITE_CZ) img->cw_next = 0;
    img->cz_state = 0;   /* a change may have reused its clusters since */
    return Q2W_OK;
}

Q2WDEF int q2w_open(q2w_image *img, const q2w_config *cfg)
{
    if (!img || !cfg || !cfg->mem || !cfg->ops) return Q2W_ERR_ARG;
    memset(img, 0, sizeof *img);
    if (cfg->ops_cap < Q2W_MIN_OPS)
        return q2w__fail(img, Q2W_ERR_NOMEM, "cfg.ops_cap", 0, cfg->ops_cap);
    img->mem = cfg->mem;
    img->mem_len = cfg->mem_len;
    img->max_slots = cfg->max_slots;
    img->cap_frees = cfg->max_frees;
    img->ops = cfg->ops;
    img->ops_cap = cfg->ops_cap;
    img->writable = cfg->writable != 0;
    img->has_backing = cfg->has_backing != 0;
    img->no_backing_ok = cfg->no_backing != 0;
    img->backing_size = cfg->backing_size;
    img->file_end = cfg->file_size;
    img->op = Q2W__OP_OPEN;
    return q2w__drive(img);
}

Q2WDEF int q2w_read(q2w_image *img, uint64_t off, void *dst, size_t len)
{
    int rc = q2w__begin(img, Q2W__OP_READ, off, len);
    if (rc != Q2W_OK) return rc;
    if (!dst && len) { img->op = Q2W__OP_NONE; return Q2W_ERR_ARG; }
    img->op_dst = (unsigned char *)dst;
    return q2w__drive(img);
}

Q2WDEF int q2w_write(q2w_image *img, uint64_t off, const void *src,
                     size_t len)
{
    int rc = q2w__begin(img, Q2W__OP_WRITE, off, len);
    if (rc != Q2W_OK) return rc;
    if (!src && len) { img->op = Q2W__OP_NONE; return Q2W_ERR_ARG; }
    img->op_src = (const unsigned char *)src;
    return q2w__drive(img);
}

Q2WDEF int q2w_write_zeroes(q2w_image *img, uint64_t off, uint64_t len)
{
    int rc = q2w__begin(img, Q2W__OP_ZEROES, off, len);
    return rc != Q2W_OK ? rc : q2w__drive(img);
}

Q2WDEF int q2w_discard(q2w_image *img, uint64_t off, uint64_t len)
{
    int rc = q2w__begin(img, Q2W__OP_DISCARD, off, len);
    return rc != Q2W_OK ? rc : q2w__drive(img);
}

Q2WDEF int q2w_flush(q2w_image *img)
{
    int rc = q2w__begin(img, Q2W__OP_FLUSH, 0, 0);
    return rc != Q2W_OK ? rc : q2w__drive(img);
}

Q2WDEF int q2w_close(q2w_image *img)
{
    int rc = q2w__begin(img, Q2W__OP_CLOSE, 0, 0);
    return rc != Q2W_OK ? rc : q2w__drive(img);
}

Q2WDEF int q2w_make_empty(q2w_image *img)
{
    int rc = q2w__begin(img, Q2W__OP_EMPTY, 0, 0);
    if (rc != Q2W_OK) return rc;
    img->op_len = img->size;
    return q2w__drive(img);
}

Q2WDEF int q2w_write_compressed(q2w_image *img, uint64_t off, const void *src, size_t len,
                                void *work, size_t work_len)
{
    int rc = q2w__begin(img, Q2W__OP_WRITE_CZ, off, len);
    uint64_t cs;
    if (rc != Q2W_OK) return rc;
    cs = img->cluster_size;
    img->op = Q2W__OP_NONE;
    if (!src || !work || (off & (cs - 1)) || len == 0 ||
        (len != cs && off + len != img->size) || len > cs)
        return q2w__fail(img, Q2W_ERR_ARG, "compressed write: one whole cluster (or the "
                                           "disk's last one)", off, len);
    if (work_len < Q2W_CZ_WORK(cs)) {
        q2w__fail(img, Q2W_ERR_NOMEM, "compressed write: work", 0, work_len);
        img->err.needed = Q2W_CZ_WORK(cs);
        return Q2W_ERR_NOMEM;
    }
    if (img->compression_type != 0)
        return q2w__fail(img, Q2W_ERR_UNSUPPORTED, "compressed write: zstd compression type",
                         104, img->compression_type);
    img->op = Q2W__OP_WRITE_CZ;
    img->op_src = (const unsigned char *)src;
    img->cw_work = (unsigned char *)work;   /* (q2w_deflate aligns its part) */
    return q2w__drive(img);
}

Q2WDEF int q2w_set_backing(q2w_image *img, const char *name, const char *fmt,
                           uint64_t backing_size)
{
    size_t nl = name ? strlen(name) : 0, fl = fmt ? strlen(fmt) : 0;
    int rc = q2w__begin(img, Q2W__OP_SET_BACKING, 0, 0);
    if (rc != Q2W_OK) return rc;
    if ((name && (nl == 0 || nl > Q2W_MAX_BACKING_NAME)) ||
        (fmt && (fl == 0 || fl > Q2W_MAX_BACKING_FMT || !name))) {
        img->op = Q2W__OP_NONE;
        return q2w__fail(img, Q2W_ERR_ARG, name && (nl == 0 || nl > Q2W_MAX_BACKING_NAME)
                                               ? "backing" : "backing_fmt",
                         0, name && (nl == 0 || nl > Q2W_MAX_BACKING_NAME) ? nl : fl);
    }
    img->sb_name = name;
    img->sb_fmt = fmt;
    img->op_arg = backing_size;
    return q2w__drive(img);
}

Q2WDEF int q2w_resize(q2w_image *img, uint64_t new_size)
{
    int rc = q2w__begin(img, Q2W__OP_RESIZE, 0, 0);
    if (rc != Q2W_OK) return rc;
    img->op_arg = new_size;
    return q2w__drive(img);
}

static int q2w__snap_name(q2w_image *img, const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > Q2W_MAX_SNAPSHOT_NAME)
        return q2w__fail(img, Q2W_ERR_ARG, "snapshot name", 0, n);
    img->sn_name = name;
    img->sn_name_len = n;
    return Q2W_OK;
}

Q2WDEF int q2w_snapshot_get(q2w_image *img, uint32_t index, q2w_snapshot *out)
{
    int rc = q2w__begin(img, Q2W__OP_SNAP_GET, 0, 0);
    if (rc != Q2W_OK) return rc;
    if (!out) { img->op = Q2W__OP_NONE; return Q2W_ERR_ARG; }
    img->sn_name = NULL;
    img->sn_index = index;
    img->sn_out = out;
    q2w__walk_begin(img);
    return q2w__drive(img);
}

Q2WDEF int q2w_snapshot_find(q2w_image *img, const char *name,
                             q2w_snapshot *out)
{
    int rc = q2w__begin(img, Q2W__OP_SNAP_GET, 0, 0);
    if (rc != Q2W_OK) return rc;
    if (!out || (rc = q2w__snap_name(img, name)) != Q2W_OK) {
        img->op = Q2W__OP_NONE;
        return out ? rc : Q2W_ERR_ARG;
    }
    img->sn_out = out;
    q2w__walk_begin(img);
    return q2w__drive(img);
}

Q2WDEF int q2w_snapshot_create(q2w_image *img, const char *name,
                               uint32_t date_sec, uint32_t date_nsec,
                               uint64_t vm_clock_ns)
{
    int rc = q2w__begin(img, Q2W__OP_SNAP_CREATE, 0, 0);
    if (rc != Q2W_OK) return rc;
    if ((rc = q2w__snap_name(img, name)) != Q2W_OK) {
        img->op = Q2W__OP_NONE;
        return rc;
    }
    img->sn_date_sec = date_sec;
    img->sn_date_nsec = date_nsec;
    img->sn_vm_clock = vm_clock_ns;
    return q2w__drive(img);
}

Q2WDEF int q2w_snapshot_delete(q2w_image *img, const char *name)
{
    int rc = q2w__begin(img, Q2W__OP_SNAP_DELETE, 0, 0);
    if (rc != Q2W_OK) return rc;
    if ((rc = q2w__snap_name(img, name)) != Q2W_OK) {
        img->op = Q2W__OP_NONE;
        return rc;
    }
    q2w__walk_begin(img);
    return q2w__drive(img);
}

Q2WDEF int q2w_amend_compat(q2w_image *img, int version)
{
    int rc = q2w__begin(img, Q2W__OP_AMEND, 0, 0);
    if (rc != Q2W_OK) return rc;
    if (version != 2 && version != 3) {
        img->op = Q2W__OP_NONE;
        return q2w__fail(img, Q2W_ERR_ARG, "version", 4, (uint64_t)(version < 0 ? 0 : version));
    }
    img->op_arg = (uint64_t)version;
    return q2w__drive(img);
}

Q2WDEF int q2w_snapshot_apply(q2w_image *img, const char *name)
{
    int rc = q2w__begin(img, Q2W__OP_SNAP_APPLY, 0, 0);
    if (rc != Q2W_OK) return rc;
    if ((rc = q2w__snap_name(img, name)) != Q2W_OK) {
        img->op = Q2W__OP_NONE;
        return rc;
    }
    q2w__walk_begin(img);
    return q2w__drive(img);
}

/* A snapshot read or map begun: the range checked against the snapshot's
 * size and its L1 taken; refused (the operation dropped) otherwise. */
static int q2w__snap_view(q2w_image *img, const q2w_snapshot *sn, uint64_t off,
                          uint64_t len)
{
    /* Without a recorded disk size (v2 entries), the current size, as
     * qemu reads it; past the snapshot's L1 it is unallocated. */
    uint64_t limit = sn->disk_size ? sn->disk_size : img->size;
    if (off > limit || len > limit - off) {
        img->op = Q2W__OP_NONE;
        return q2w__fail(img, Q2W_ERR_RANGE, "snapshot range", off, len);
    }
    if ((sn->l1_offset & (img->cluster_size - 1)) ||
        (uint64_t)sn->l1_size * 8 > Q2W_MAX_L1_BYTES) {
        img->op = Q2W__OP_NONE;
        return q2w__fail(img, Q2W_ERR_ARG, "snapshot", sn->l1_offset, 0);
    }
    img->sn_l1_off = sn->l1_offset;
    img->sn_l1_size = sn->l1_size;
    return Q2W_OK;
}

Q2WDEF int q2w_read_snapshot(q2w_image *img, const q2w_snapshot *sn,
                             uint64_t off, void *dst, size_t len)
{
    int rc = q2w__begin(img, Q2W__OP_SNAP_READ, off, len);
    if (rc != Q2W_OK) return rc;
    if (!sn || (!dst && len)) { img->op = Q2W__OP_NONE; return Q2W_ERR_ARG; }
    if ((rc = q2w__snap_view(img, sn, off, len)) != Q2W_OK) return rc;
    img->op_dst = (unsigned char *)dst;
    return q2w__drive(img);
}

static int q2w__map_begin(q2w_image *img, uint64_t off, q2w_extent *out)
{
    if (!out) { img->op = Q2W__OP_NONE; return Q2W_ERR_ARG; }
    out->off = off;
    out->len = 0;
    out->kind = Q2W_EXTENT_ZERO;
    out->host = 0;
    out->allocated = 0;
    img->map_out = out;
    return q2w__drive(img);
}

Q2WDEF int q2w_map(q2w_image *img, uint64_t off, uint64_t len,
                   q2w_extent *out)
{
    int rc = q2w__begin(img, Q2W__OP_MAP, off, len);
    if (rc != Q2W_OK) return rc;
    return q2w__map_begin(img, off, out);
}

Q2WDEF int q2w_map_snapshot(q2w_image *img, const q2w_snapshot *sn,
                            uint64_t off, uint64_t len, q2w_extent *out)
{
    int rc = q2w__begin(img, Q2W__OP_SNAP_MAP, off, len);
    if (rc != Q2W_OK) return rc;
    if (!sn) { img->op = Q2W__OP_NONE; return Q2W_ERR_ARG; }
    if ((rc = q2w__snap_view(img, sn, off, len)) != Q2W_OK) return rc;
    return q2w__map_begin(img, off, out);
}

/* ---- commit and rebase ------------------------------------------------------ */
enum { Q2W__JOB_COMMIT = 1, Q2W__JOB_REBASE };
/* job->phase: each starts one operation on a file (or none) and goes on
 * from what it found when that operation ends (q2w__job_next). */
enum {
    Q2W__J_GROW,        /* commit: the base grown to the overlay's size */
    Q2W__J_MAP,         /* the overlay's next extent from pos */
    Q2W__J_READ,        /* commit: n data bytes of the overlay */
    Q2W__J_WRITE,       /* commit: ... into the base */
    Q2W__J_ZERO,        /* commit: zeros into the base */
    Q2W__J_FLUSH_OTHER, /* commit: the base durable ... */
    Q2W__J_EMPTY,       /* ... before the overlay is emptied */
    Q2W__J_MAP_NEW,     /* rebase: does the new backing file hold any? */
    Q2W__J_MAP_OLD,     /* rebase: ... and the old one? */
    Q2W__J_READ_NEW,    /* rebase: n bytes of the new backing's view */
    Q2W__J_READ_OLD,    /* rebase: ... and of the overlay's */
    Q2W__J_COMPARE,     /* rebase: clusters that differ copied in */
    Q2W__J_FLUSH_TOP,
    Q2W__J_SET_BACKING, /* rebase: the header names the new backing file */
    Q2W__J_END
};

static int q2w__job_fail(q2w_job *j, const q2w_image *img, int rc)
{
    if (img) j->err = img->err;
    else {
        memset(&j->err, 0, sizeof j->err);
        j->err.what = "executor";
    }
    j->err.code = rc;
    j->phase = Q2W__J_END;
    return rc;
}

/* A raw OTHER op (the job's own batch of one). */
static int q2w__job_raw(q2w_job *j, int kind, uint64_t off, size_t len,
                        unsigned char *dst, const unsigned char *src)
{
    j->ops[0].kind = kind;
    j->ops[0].off = off;
    j->ops[0].len = len;
    j->ops[0].dst = dst;
    j->ops[0].src = src;
    j->n_ops = 1;
    if (kind == Q2W_OP_WRITE) j->other_written = 1;
    j->file = Q2W_JOB_OTHER;
    return Q2W_PENDING;
}

/* The first and last virtual byte of the differing run of clusters at
 * or after sub in the chunk (old view in buf, new view after it):
 * 1 with [*a, *b) relative to pos, or 0 when the rest is equal. */
/* All n bytes zero (the first, and each equal to the next: memcmp's
 * speed). */
static int q2w__all_zero(const unsigned char *p, size_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static int q2w__job_diff(const q2w_job *j, uint64_t *a, uint64_t *b)
{
    uint64_t cs = j->top->cluster_size, x = j->sub, start = 0;
    int in = 0;
    while (x < j->n) {
        uint64_t e = ((j->pos + x) | (cs - 1)) + 1 - j->pos;
        if (e > j->n) e = j->n;
        if (j->new_zero ? !q2w__all_zero(j->buf + x, (size_t)(e - x))
                        : memcmp(j->buf + x, j->buf + j->chunk + x, (size_t)(e - x)) != 0) {
            if (!in) start = x;
            in = 1;
        } else if (in) {
            break;
        }
        x = e;
    }
    *a = start;
    *b = x;
    return in;
}

/* Starts the operation of j->phase on its file: Q2W_OK when it ended at
 * once, Q2W_PENDING, an error, or Q2W__AGAIN when the phase changed
 * without one. */
static int q2w__job_start(q2w_job *j)
{
    int raw = j->other_kind == Q2W_BACKING_RAW;
    unsigned char *old_view = j->buf, *new_view = j->buf + j->chunk;
    j->file = Q2W_JOB_TOP;
    switch (j->phase) {
    case Q2W__J_GROW:
        if (j->other_size >= j->size) return Q2W_OK;
        j->file = Q2W_JOB_OTHER;
        if (raw) return q2w__job_raw(j, Q2W_OP_WRITE, j->size - 1, 1, NULL, NULL);
        return q2w_resize(j->other, j->size);
    case Q2W__J_MAP:
        if (j->pos >= j->size) {
            j->phase = j->kind == Q2W__JOB_COMMIT ? Q2W__J_FLUSH_OTHER : Q2W__J_FLUSH_TOP;
            return Q2W__AGAIN;
        }
        return q2w_map(j->top, j->pos, j->size - j->pos, &j->ext);
    case Q2W__J_READ:
        return q2w_read(j->top, j->pos, old_view, (size_t)j->n);
    case Q2W__J_WRITE:
        j->file = Q2W_JOB_OTHER;
        if (raw) return q2w__job_raw(j, Q2W_OP_WRITE, j->pos, (size_t)j->n, NULL, old_view);
        return q2w_write(j->other, j->pos, old_view, (size_t)j->n);
    case Q2W__J_ZERO:
        j->file = Q2W_JOB_OTHER;
        if (raw) return q2w__job_raw(j, Q2W_OP_WRITE, j->pos, (size_t)j->n, NULL, NULL);
        return q2w_write_zeroes(j->other, j->pos, j->n);
    case Q2W__J_FLUSH_OTHER:
        j->file = Q2W_JOB_OTHER;
        if (raw) /* (nothing written: no fdatasync to pay) */
            return j->other_written ? q2w__job_raw(j, Q2W_OP_FLUSH, 0, 0, NULL, NULL)
                                    : Q2W_OK;
        return q2w_flush(j->other);
    case Q2W__J_EMPTY:
        return q2w_make_empty(j->top);
    case Q2W__J_MAP_NEW: {
        /* zeros there (past its end, no file, or a qcow2 file that holds
         * nothing over the chunk): the old bytes are compared with zero,
         * nothing read from the new file */
        uint64_t m = j->pos < j->other_size ? j->other_size - j->pos : 0;
        j->new_zero = m == 0 || j->other_kind == Q2W_BACKING_NONE;
        j->ext2.kind = 0;
        if (j->new_zero || j->other_kind != Q2W_BACKING_QCOW2) return Q2W_OK;
        j->file = Q2W_JOB_OTHER;
        return q2w_map(j->other, j->pos, m < j->n ? m : j->n, &j->ext2);
    }
    case Q2W__J_MAP_OLD: {
        /* the old file holds nothing over the chunk (the overlay's view of
         * it is that file's: its backing reads): with new_zero, the chunk
         * is the same in both and nothing is read */
        uint64_t m = j->old && j->pos < j->old->size ? j->old->size - j->pos : 0;
        j->old_zero = 0;
        j->ext2.kind = 0;
        if (!j->new_zero) return Q2W_OK;
        /* the overlay reads zeros there itself, or past the old file's end */
        if (j->ext.kind == Q2W_EXTENT_ZERO || (j->old && m == 0)) {
            j->old_zero = 1;
            return Q2W_OK;
        }
        if (!j->old) return Q2W_OK;
        j->file = Q2W_JOB_OLD;
        return q2w_map(j->old, j->pos, m < j->n ? m : j->n, &j->ext2);
    }
    case Q2W__J_READ_NEW: {
        uint64_t m = j->pos < j->other_size ? j->other_size - j->pos : 0;
        if (m > j->n) m = j->n;
        if (j->new_zero) return Q2W_OK;
        memset(new_view, 0, (size_t)j->n);   /* past its end: zeros */
        if (!m) return Q2W_OK;
        j->file = Q2W_JOB_OTHER;
        if (raw) return q2w__job_raw(j, Q2W_OP_READ, j->pos, (size_t)m, new_view, NULL);
        return q2w_read(j->other, j->pos, new_view, (size_t)m);
    }
    case Q2W__J_READ_OLD:
        if (j->ext.kind == Q2W_EXTENT_ZERO) {
            memset(old_view, 0, (size_t)j->n);
            return Q2W_OK;
        }
        return q2w_read(j->top, j->pos, old_view, (size_t)j->n);
    case Q2W__J_COMPARE: {
        uint64_t a, b;
        if (!q2w__job_diff(j, &a, &b)) {
            j->pos += j->n;
            j->phase = Q2W__J_MAP;
            return Q2W__AGAIN;
        }
        j->sub = b;
        if (q2w__all_zero(old_view + a, (size_t)(b - a)))
            return q2w_write_zeroes(j->top, j->pos + a, b - a);
        return q2w_write(j->top, j->pos + a, old_view + a, (size_t)(b - a));
    }
    case Q2W__J_FLUSH_TOP:
        return q2w_flush(j->top);
    case Q2W__J_SET_BACKING:
        return q2w_set_backing(j->top, j->name, j->fmt, j->other_size);
    default:
        return Q2W__DONE;
    }
}

/* The operation of j->phase ended: the next phase. */
static void q2w__job_next(q2w_job *j)
{
    switch (j->phase) {
    case Q2W__J_GROW:
        /* the overlay's reads now see the base's new length */
        if (j->top->has_backing && j->top->backing_size < j->size)
            j->top->backing_size = j->size;
        j->phase = Q2W__J_MAP;
        break;
    case Q2W__J_MAP: {
        int data = j->ext.kind == Q2W_EXTENT_DATA || j->ext.kind == Q2W_EXTENT_COMPRESSED;
        j->n = j->ext.len < j->chunk ? j->ext.len : j->chunk;
        if (j->kind == Q2W__JOB_COMMIT) {
            if (data) {
                j->phase = Q2W__J_READ;
            } else if (j->ext.kind == Q2W_EXTENT_ZERO && j->pos < j->other_size) {
                /* (past the base's old end it reads as zeros already) */
                j->n = j->ext.len < j->other_size - j->pos ? j->ext.len
                                                           : j->other_size - j->pos;
                j->phase = Q2W__J_ZERO;
            } else {
                j->pos += j->ext.len;
            }
        } else if (data) {
            j->pos += j->ext.len;   /* the overlay's own: unchanged */
        } else {
            j->phase = Q2W__J_MAP_NEW;
        }
        break;
    }
    case Q2W__J_READ:
        j->phase = Q2W__J_WRITE;
        break;
    case Q2W__J_WRITE:
    case Q2W__J_ZERO:
        j->pos += j->n;
        j->phase = Q2W__J_MAP;
        break;
    case Q2W__J_FLUSH_OTHER:
        j->phase = (j->flags & Q2W_COMMIT_KEEP) ? Q2W__J_END : Q2W__J_EMPTY;
        break;
    case Q2W__J_EMPTY:
        j->phase = Q2W__J_FLUSH_TOP;
        break;
    case Q2W__J_MAP_NEW: {
        uint64_t m = j->pos < j->other_size ? j->other_size - j->pos : 0;
        /* the chunk shrinks to the new file's first run of one kind (past
         * the file's end the rest reads zeros too) */
        if (j->ext2.kind && m && j->ext2.len < (m < j->n ? m : j->n)) j->n = j->ext2.len;
        if (j->ext2.kind == Q2W_EXTENT_ZERO) j->new_zero = 1;
        j->phase = Q2W__J_MAP_OLD;
        break;
    }
    case Q2W__J_MAP_OLD: {
        uint64_t m = j->old && j->pos < j->old->size ? j->old->size - j->pos : 0;
        if (j->old_zero || j->ext2.kind == Q2W_EXTENT_ZERO) {
            /* zeros in both (the old file's first run, or all the chunk
             * when that run reaches its end): nothing to copy */
            j->pos += j->old_zero || j->ext2.len >= (m < j->n ? m : j->n) ? j->n : j->ext2.len;
            j->phase = Q2W__J_MAP;
        } else {
            j->phase = Q2W__J_READ_NEW;
        }
        break;
    }
    case Q2W__J_READ_NEW:
        j->phase = Q2W__J_READ_OLD;
        break;
    case Q2W__J_READ_OLD:
        j->sub = 0;
        j->phase = Q2W__J_COMPARE;
        break;
    case Q2W__J_COMPARE:
        break;   /* the next differing run, from sub */
    case Q2W__J_FLUSH_TOP:
        j->phase = j->kind == Q2W__JOB_COMMIT ? Q2W__J_END : Q2W__J_SET_BACKING;
        break;
    default:
        j->phase = Q2W__J_END;
        break;
    }
}

static q2w_image *q2w__job_img(const q2w_job *j)
{
    return j->file == Q2W_JOB_TOP ? j->top : j->file == Q2W_JOB_OLD ? j->old : j->other;
}

static int q2w__job_run(q2w_job *j)
{
    for (;;) {
        int rc = q2w__job_start(j);
        if (rc == Q2W__DONE) return Q2W_OK;
        if (rc == Q2W__AGAIN) continue;
        if (rc == Q2W_PENDING) {
            j->waiting = 1;
            return rc;
        }
        if (rc < 0)
            return q2w__job_fail(j, j->file == Q2W_JOB_OTHER &&
                                            j->other_kind == Q2W_BACKING_RAW
                                        ? NULL : q2w__job_img(j), rc);
        q2w__job_next(j);
    }
}

static int q2w__job_begin(q2w_job *j, int kind, q2w_image *top, int other_kind,
                          q2w_image *other, uint64_t raw_size, void *buf,
                          size_t buf_len)
{
    size_t chunk;
    memset(j, 0, sizeof *j);
    j->phase = Q2W__J_END;
    j->err.what = "job";
    if (!top || !buf || (other_kind == Q2W_BACKING_QCOW2) != (other != NULL) ||
        other_kind < Q2W_BACKING_NONE || other_kind > Q2W_BACKING_QCOW2 || other == top)
        return j->err.code = Q2W_ERR_ARG;
    if (!top->opened || top->failed || (other && (!other->opened || other->failed))) {
        j->err.what = "image not open";
        return j->err.code = Q2W_ERR_ARG;
    }
    chunk = (buf_len / 2) & ~(size_t)(top->cluster_size - 1);
    if (chunk < top->cluster_size) {
        j->err.what = "job buffer: two clusters of the overlay";
        j->err.needed = 2 * top->cluster_size;
        return j->err.code = Q2W_ERR_NOMEM;
    }
    j->kind = kind;
    j->top = top;
    j->other = other;
    j->other_kind = other_kind;
    j->other_size = other ? other->size : raw_size;
    j->size = top->size;
    j->buf = (unsigned char *)buf;
    j->chunk = chunk;
    j->err.what = NULL;
    return Q2W_OK;
}

Q2WDEF int q2w_commit(q2w_job *job, q2w_image *top, int base_kind,
                      q2w_image *base, uint64_t raw_base_size, unsigned flags,
                      void *buf, size_t buf_len)
{
    int rc;
    if (!job) return Q2W_ERR_ARG;
    rc = q2w__job_begin(job, Q2W__JOB_COMMIT, top, base_kind, base, raw_base_size,
                        buf, buf_len);
    if (rc != Q2W_OK) return rc;
    if (base_kind == Q2W_BACKING_NONE || !top->has_backing_name) {
        job->err.what = !top->has_backing_name ? "the overlay has no backing file"
                                               : "base";
        return job->err.code = Q2W_ERR_ARG;
    }
    if (!top->writable || (base && !base->writable)) {
        job->err.what = !top->writable ? "overlay" : "base";
        return job->err.code = Q2W_ERR_READONLY;
    }
    job->flags = flags;
    job->phase = Q2W__J_GROW;
    return q2w__job_run(job);
}

Q2WDEF int q2w_rebase(q2w_job *job, q2w_image *top, q2w_image *old_backing, int new_kind,
                      q2w_image *new_backing, uint64_t raw_size, const char *name,
                      const char *fmt, void *buf, size_t buf_len)
{
    size_t nl = name ? strlen(name) : 0, fl = fmt ? strlen(fmt) : 0;
    int rc;
    if (!job) return Q2W_ERR_ARG;
    rc = q2w__job_begin(job, Q2W__JOB_REBASE, top, new_kind, new_backing, raw_size,
                        buf, buf_len);
    if (rc != Q2W_OK) return rc;
    if ((new_kind == Q2W_BACKING_NONE) != (name == NULL) ||
        (name && (nl == 0 || nl > Q2W_MAX_BACKING_NAME)) ||
        (fmt && (fl == 0 || fl > Q2W_MAX_BACKING_FMT || !name))) {
        job->err.what = fmt && name && nl && nl <= Q2W_MAX_BACKING_NAME ? "backing_fmt"
                                                                        : "backing";
        return job->err.code = Q2W_ERR_ARG;
    }
    if (!top->writable) {
        job->err.what = "overlay";
        return job->err.code = Q2W_ERR_READONLY;
    }
    if (old_backing && (old_backing == top || old_backing == new_backing ||
                        !old_backing->opened || old_backing->failed)) {
        job->err.what = "old backing file";
        return job->err.code = Q2W_ERR_ARG;
    }
    job->old = old_backing;
    job->name = name;
    job->fmt = fmt;
    /* Where the new backing file is longer than the old one (or the
     * overlay had none), unallocated clusters will show its bytes: zeros
     * written there must not be skipped as already reading zeros. The old
     * file's reads past its end give zeros (the op contract). */
    if (!top->has_backing || top->backing_size < job->other_size) {
        top->has_backing = 1;
        if (top->backing_size < job->other_size) top->backing_size = job->other_size;
    }
    job->phase = Q2W__J_MAP;
    return q2w__job_run(job);
}

Q2WDEF const q2w_op *q2w_job_batch(const q2w_job *job, size_t *n, int *file)
{
    if (!job || !job->waiting) {
        if (n) *n = 0;
        return NULL;
    }
    if (file) *file = job->file;
    if (job->file == Q2W_JOB_OTHER && job->other_kind == Q2W_BACKING_RAW) {
        if (n) *n = job->n_ops;
        return job->ops;
    }
    return q2w_batch(q2w__job_img(job), n);
}

Q2WDEF int q2w_job_resume(q2w_job *job, int io_rc)
{
    int rc;
    if (!job) return Q2W_ERR_ARG;
    if (!job->waiting) return job->phase == Q2W__J_END && job->err.code ? job->err.code
                                                                      : Q2W_ERR_ARG;
    job->waiting = 0;
    if (job->file == Q2W_JOB_OTHER && job->other_kind == Q2W_BACKING_RAW) {
        job->n_ops = 0;
        if (io_rc < 0) return q2w__job_fail(job, NULL, Q2W_ERR_IO);
    } else {
        rc = q2w_resume(q2w__job_img(job), io_rc);
        if (rc == Q2W_PENDING) {
            job->waiting = 1;
            return rc;
        }
        if (rc < 0) return q2w__job_fail(job, q2w__job_img(job), rc);
    }
    q2w__job_next(job);
    return q2w__job_run(job);
}

Q2WDEF void q2w_job_progress(const q2w_job *job, uint64_t *done, uint64_t *total)
{
    if (done) *done = job ? (job->phase == Q2W__J_END ? job->size : job->pos) : 0;
    if (total) *total = job ? job->size : 0;
}

Q2WDEF const q2w_error_info *q2w_job_error(const q2w_job *job)
{
    return &job->err;
}

Q2WDEF const q2w_op *q2w_batch(const q2w_image *img, size_t *n)
{
    *n = img->n_ops;
    return img->ops;
}

Q2WDEF const q2w_error_info *q2w_error(const q2w_image *img)
{
    return &img->err;
}

Q2WDEF void q2w_info_get(const q2w_image *img, q2w_info *info)
{
    memset(info, 0, sizeof *info);
    info->version = img->version;
    info->cluster_size = (uint32_t)img->cluster_size;
    info->refcount_bits = 1u << img->refcount_order;
    info->size = img->size;
    info->l1_offset = img->l1_offset;
    info->l1_size = img->l1_size;
    info->refcount_table_offset = img->rt_offset;
    info->refcount_table_clusters = img->rt_clusters;
    info->snapshots_offset = img->snapshots_offset;
    info->nb_snapshots = img->nb_snapshots;
    info->incompatible = img->incompatible;
    info->compatible = img->compatible;
    info->autoclear = img->autoclear;
    info->header_length = img->header_length;
    info->compression_type = img->compression_type;
    info->backing_name = img->has_backing_name ? img->backing_name : NULL;
    info->backing_format = img->backing_fmt[0] ? img->backing_fmt : NULL;
    info->file_end = img->file_end;
    info->cache_slots = img->n_slots;
}

/* ---- create ----------------------------------------------------------------- */
/* The backing file name and format checked, and that the format
 * extension and the name fit in cluster 0 after the header of hlen bytes;
 * *ext_end: the name's offset. */
static int q2w__create_names(const q2w_create_opts *opts, uint64_t cs,
                             uint32_t hlen, size_t *name_len, size_t *fmt_len,
                             size_t *ext_end, q2w_error_info *err)
{
    if (opts->backing) {
        *name_len = strlen(opts->backing);
        if (*name_len == 0 || *name_len > Q2W_MAX_BACKING_NAME)
            return q2w__hfail(err, Q2W_ERR_ARG, "backing", 0, *name_len);
    }
    if (opts->backing_fmt) {
        *fmt_len = strlen(opts->backing_fmt);
        if (*fmt_len == 0 || *fmt_len > Q2W_MAX_BACKING_FMT || !opts->backing)
            return q2w__hfail(err, Q2W_ERR_ARG, "backing_fmt", 0, *fmt_len);
    }
    *ext_end = hlen + (*fmt_len ? 8 + ((*fmt_len + 7) & ~(size_t)7) : 0) + 8;
    if (*ext_end + *name_len > cs)
        return q2w__hfail(err, Q2W_ERR_LIMIT,
                          "backing name does not fit in cluster 0", 0,
                          *ext_end + *name_len);
    return Q2W_OK;
}

/* Cluster 0 holds the header, then come the refcount table, the blocks
 * and n1 L1 clusters; the blocks (epb entries each) count all of it. The
 * table's and the blocks' clusters (from 1 and 1) grown to a fixed point. */
static void q2w__create_layout(uint64_t cs, uint64_t epb, uint64_t n1,
                               uint64_t *table_clusters, uint64_t *blocks)
{
    uint64_t i, total;
    for (i = 0; i < 64; i++) {
        uint64_t blocks_needed, table_needed;
        total = 1 + *table_clusters + *blocks + n1;
        blocks_needed = (total + epb - 1) / epb;
        table_needed = (blocks_needed * 8 + cs - 1) / cs;
        if (blocks_needed == *blocks && table_needed == *table_clusters) break;
        *blocks = blocks_needed;
        *table_clusters = table_needed;
    }
}

Q2WDEF int q2w_create(const q2w_create_opts *opts, void *buf, size_t cap,
                      uint64_t *image_len, q2w_error_info *err)
{
    q2w_error_info dummy;
    uint64_t cs, cb = 0, l1_entries, n1, total, i, epb;
    uint64_t table_clusters = 1, blocks = 1;   /* refcount table, blocks */
    uint32_t rbits, order = 0, hlen;
    int version, rc;
    size_t name_len = 0, fmt_len = 0, ext_end = 0;
    unsigned char *p = (unsigned char *)buf;
    if (!err) err = &dummy;
    memset(err, 0, sizeof *err);
    if (!opts || !image_len)
        return q2w__hfail(err, Q2W_ERR_ARG, "arguments", 0, 0);
    cs = opts->cluster_size ? opts->cluster_size : 65536u;
    while ((1ull << cb) < cs) cb++;
    if ((1ull << cb) != cs || cb < Q2W_MIN_CLUSTER_BITS ||
        cb > Q2W_MAX_CLUSTER_BITS)
        return q2w__hfail(err, Q2W_ERR_ARG, "cluster_size", 0, cs);
    version = opts->version ? opts->version : 3;
    if (version != 2 && version != 3)
        return q2w__hfail(err, Q2W_ERR_ARG, "version", 0, (uint64_t)version);
    rbits = opts->refcount_bits ? opts->refcount_bits : 16u;
    while ((1u << order) < rbits && order < 7) order++;
    if (order > 6 || (1u << order) != rbits || (version == 2 && order != 4))
        return q2w__hfail(err, Q2W_ERR_ARG, "refcount_bits", 0, rbits);
    if (opts->size > (1ull << 62))
        return q2w__hfail(err, Q2W_ERR_LIMIT, "size", 0, opts->size);
    l1_entries = (opts->size + cs * (cs / 8) - 1) / (cs * (cs / 8));
    if (l1_entries * 8 > Q2W_MAX_L1_BYTES)
        return q2w__hfail(err, Q2W_ERR_LIMIT, "size (L1 table)", 0,
                          opts->size);
    hlen = version == 3 ? 112u : 72u;
    rc = q2w__create_names(opts, cs, hlen, &name_len, &fmt_len, &ext_end, err);
    if (rc != Q2W_OK) return rc;
    n1 = (l1_entries * 8 + cs - 1) / cs; /* an empty disk has no L1 (as qemu) */
    epb = (cs * 8) >> order;
    q2w__create_layout(cs, epb, n1, &table_clusters, &blocks);
    total = 1 + table_clusters + blocks + n1;
    *image_len = total * cs;
    if (!buf) return Q2W_OK;
    if (cap < *image_len) {
        err->needed = *image_len;
        return q2w__hfail(err, Q2W_ERR_NOMEM, "buffer", 0, *image_len);
    }
    memset(p, 0, (size_t)*image_len);
    q2w__put32(p, 0x514649fbu);
    q2w__put32(p + 4, (uint32_t)version);
    q2w__put32(p + 20, (uint32_t)cb);
    q2w__put64(p + 24, opts->size);
    q2w__put32(p + 36, (uint32_t)l1_entries);
    q2w__put64(p + 40, n1 ? (1 + table_clusters + blocks) * cs : 0);
    q2w__put64(p + 48, cs);
    q2w__put32(p + 56, (uint32_t)table_clusters);
    if (version == 3) {
        q2w__put32(p + 96, order);
        q2w__put32(p + 100, hlen);
    }
    if (fmt_len) {
        q2w__put32(p + hlen, Q2W__EXT_BACKING_FMT);
        q2w__put32(p + hlen + 4, (uint32_t)fmt_len);
        memcpy(p + hlen + 8, opts->backing_fmt, fmt_len);
    }
    if (name_len) {
        q2w__put64(p + 8, ext_end);
        q2w__put32(p + 16, (uint32_t)name_len);
        memcpy(p + ext_end, opts->backing, name_len);
    }
    for (i = 0; i < blocks; i++)
        q2w__put64(p + cs + i * 8, (1 + table_clusters + i) * cs);
    for (i = 0; i < total; i++)
        q2w__rc_set(p + (1 + table_clusters + i / epb) * cs, i % epb, order, 1);
    return Q2W_OK;
}

/* ---- measure (qemu-img measure's arithmetic) ------------------------------- */
/* Bytes of refcount blocks and table that count `clusters` clusters and
 * themselves: their fixed point. */
static uint64_t q2w__measure_refcounts(uint64_t clusters, uint64_t cs, uint32_t order)
{
    uint64_t per_table = cs / 8, per_block = cs * 8 >> order;
    uint64_t table = 0, blocks = 0, n = 0, last;
    do {
        last = n;
        blocks = (clusters + table + blocks + per_block - 1) / per_block;
        table = (blocks + per_table - 1) / per_table;
        n = clusters + blocks + table;
    } while (n != last);
    return (blocks + table) * cs;
}

Q2WDEF int q2w_measure(const q2w_create_opts *opts, uint64_t data_bytes,
                       uint64_t *required, uint64_t *fully_allocated, q2w_error_info *err)
{
    q2w_error_info local;
    uint64_t cs, size, nl2e, nl1e, meta;
    uint32_t order = 0, rbits;
    if (!err) err = &local;
    memset(err, 0, sizeof *err);
    if (!opts || !required || !fully_allocated)
        return q2w__hfail(err, Q2W_ERR_ARG, "argument", 0, 0);
    cs = opts->cluster_size ? opts->cluster_size : 65536;
    rbits = opts->refcount_bits ? opts->refcount_bits : 16;
    if (cs < 512 || cs > (2u << 20) || (cs & (cs - 1)))
        return q2w__hfail(err, Q2W_ERR_ARG, "cluster_size", 0, cs);
    if (rbits > 64 || (rbits & (rbits - 1)) || (opts->version == 2 && rbits != 16))
        return q2w__hfail(err, Q2W_ERR_ARG, "refcount_bits", 0, rbits);
    while ((1u << order) < rbits) order++;
    if (opts->size > UINT64_MAX - cs || data_bytes % cs)
        return q2w__hfail(err, Q2W_ERR_ARG, opts->size > UINT64_MAX - cs ? "size" : "data_bytes",
                          0, opts->size > UINT64_MAX - cs ? opts->size : data_bytes);
    size = (opts->size + cs - 1) / cs * cs;
    if (data_bytes > size) return q2w__hfail(err, Q2W_ERR_ARG, "data_bytes", 0, data_bytes);
    /* L2 entries for every cluster, in whole tables; L1 entries for every
     * table, in whole clusters */
    nl2e = (size / cs + cs / 8 - 1) / (cs / 8) * (cs / 8);
    if (nl2e / (cs / 8) * 8 > Q2W_MAX_L1_BYTES)
        return q2w__hfail(err, Q2W_ERR_LIMIT, "L1 table (try a larger cluster size)", 0,
                          nl2e / (cs / 8) * 8);
    nl1e = (nl2e * 8 / cs + cs / 8 - 1) / (cs / 8) * (cs / 8);
    meta = cs + nl2e * 8 + nl1e * 8;
    meta += q2w__measure_refcounts((meta + size) / cs, cs, order);
    *fully_allocated = meta + size;
    *required = meta + data_bytes;
    return Q2W_OK;
}

/* ---- checker ---------------------------------------------------------------- */
typedef struct q2w__chk {
    const q2w_io *io;
    q2w__hdr h;
    uint64_t cs, nclusters;
    uint32_t cb;
    unsigned char *a, *b;   /* two cluster buffers */
    uint32_t *counts;
    q2w_check_result *res;
    int fix_copied;         /* pass 3 sets COPIED right instead of finding */
    int unsure;             /* a structure not understood: free nothing */
} q2w__chk;

static void q2w__finding(q2w__chk *k, int kind, uint64_t offset,
                         uint64_t where, uint64_t stored, uint64_t computed)
{
    q2w_check_result *r = k->res;
    if (kind == Q2W_FIND_LEAK) r->leaks++;
    else if (kind == Q2W_FIND_UNKNOWN) r->unknown++;
    else r->corruptions++;
    if (r->n_findings < Q2W_CHECK_MAX_FINDINGS) {
        q2w_finding *f = &r->findings[r->n_findings++];
        f->kind = kind;
        f->offset = offset;
        f->where = where;
        f->stored = stored;
        f->computed = computed;
    }
}

static int q2w__chk_write(q2w__chk *k, uint64_t off, const void *src,
                          uint64_t len)
{
    if (k->io->write(k->io->user, off, src, (size_t)len) < 0) {
        k->res->check_errors++;
        return q2w__hfail(&k->res->error, Q2W_ERR_IO, "write", off, len);
    }
    return Q2W_OK;
}

static int q2w__chk_read(q2w__chk *k, uint64_t off, void *dst, size_t len)
{
    int rc = k->io->read(k->io->user, off, dst, len);
    if (rc < 0) {
        k->res->check_errors++;
        return q2w__hfail(&k->res->error, Q2W_ERR_IO, "read", off, len);
    }
    return Q2W_OK;
}

/* One reference to the cluster at `off`, from the entry at `where`. */
static void q2w__chk_ref(q2w__chk *k, uint64_t off, uint64_t where)
{
    uint64_t c;
    if (off & (k->cs - 1)) {
        q2w__finding(k, Q2W_FIND_UNALIGNED, off, where, 0, 0);
        return;
    }
    c = off >> k->cb;
    if (c >= k->nclusters) {
        q2w__finding(k, Q2W_FIND_PAST_EOF, off, where, 0, 0);
        return;
    }
    if (k->counts[c] != 0xffffffffu) k->counts[c]++;
}

static void q2w__chk_range(q2w__chk *k, uint64_t off, uint64_t len,
                           uint64_t where)
{
    uint64_t c;
    for (c = 0; c < (len + k->cs - 1) / k->cs; c++)
        q2w__chk_ref(k, off + c * k->cs, where);
}

/* A compressed L2 entry e (at w): the host clusters its data touches get
 * one reference each; with `copied`, its COPIED flag must be clear. */
static void q2w__chk_compressed(q2w__chk *k, uint64_t e, uint64_t w,
                                int active, int copied)
{
    uint32_t sbits = 62u - (k->cb - 8u);
    uint64_t coff = e & ((1ull << sbits) - 1);
    uint64_t secs = ((e >> sbits) & ((1ull << (k->cb - 8u)) - 1)) + 1;
    uint64_t first = coff & ~(k->cs - 1);
    uint64_t last = ((coff & ~511ull) + secs * 512 - 1) & ~(k->cs - 1);
    if (copied) {
        if (e & Q2W__COPIED)
            q2w__finding(k, Q2W_FIND_COPIED, first, w, e, 0);
        return;
    }
    if (active) {
        /* compressed clusters count as fragmented, as qemu counts them */
        k->res->allocated_clusters++;
        k->res->compressed_clusters++;
        k->res->fragmented_clusters++;
    }
    for (; first <= last; first += k->cs) q2w__chk_ref(k, first, w);
}

/* The L2 table at l2 (read into k->b): its clusters counted, or with
 * `copied` their COPIED flags compared (or set right, and the table
 * written back). */
static int q2w__chk_l2(q2w__chk *k, uint64_t l2, int active, int copied)
{
    uint64_t j, per = k->cs / 8, next = 0;
    int rc, b_dirty = 0;
    rc = q2w__chk_read(k, l2, k->b, (size_t)k->cs);
    if (rc != Q2W_OK) return rc;
    for (j = 0; j < per; j++) {
        uint64_t e = q2w__be64(k->b + j * 8), host, w = l2 + j * 8;
        if (!e) continue;
        if (e & Q2W__COMPRESSED) {
            q2w__chk_compressed(k, e, w, active, copied);
            continue;
        }
        host = e & Q2W__OFF_MASK;
        if (!copied) {
            if (e & Q2W__L2_RESERVED)
                q2w__finding(k, Q2W_FIND_RESERVED, host, w, e, 0);
            if (k->h.version == 2 && (e & Q2W__ZERO))
                q2w__finding(k, Q2W_FIND_ZERO_FLAG_V2, host, w, e, 0);
            if (host) {
                if (active) {
                    /* a cluster not right after the previous one in this
                     * table is fragmented (qemu's measure) */
                    k->res->allocated_clusters++;
                    if (next && host != next) k->res->fragmented_clusters++;
                    next = host + k->cs;
                }
                q2w__chk_ref(k, host, w);
            }
        } else if (host && !(host & (k->cs - 1)) &&
                   (host >> k->cb) < k->nclusters) {
            uint64_t v = k->counts[host >> k->cb];
            if ((v == 1) == ((e & Q2W__COPIED) != 0)) continue;
            if (k->fix_copied) {
                q2w__put64(k->b + j * 8, e ^ Q2W__COPIED);
                b_dirty = 1;
                k->res->copied_fixed++;
            } else {
                q2w__finding(k, Q2W_FIND_COPIED, host, w, e, v);
            }
        }
    }
    if (b_dirty && (rc = q2w__chk_write(k, l2, k->b, k->cs)) != Q2W_OK)
        return rc;
    return Q2W_OK;
}

/* Walk an L1 table: count its L2 tables and their clusters; with `copied`
 * (second walk of the active table) compare COPIED with the refcounts that
 * pass 2 left in counts[]. */
static int q2w__chk_l1(q2w__chk *k, uint64_t l1_off, uint64_t l1_size,
                       int active, int copied)
{
    uint64_t i, per = k->cs / 8, chunk = 0, chunk_len = 0;
    int rc, a_dirty = 0;
    for (i = 0; i < l1_size; i++) {
        uint64_t l1e, l2, where = l1_off + i * 8;
        if (i % per == 0) {
            if (a_dirty && (rc = q2w__chk_write(k, chunk, k->a, chunk_len)) != Q2W_OK)
                return rc;
            a_dirty = 0;
            chunk = where;
            chunk_len = (l1_size - i < per ? l1_size - i : per) * 8;
            rc = q2w__chk_read(k, where, k->a, (size_t)chunk_len);
            if (rc != Q2W_OK) return rc;
        }
        l1e = q2w__be64(k->a + (i % per) * 8);
        l2 = l1e & Q2W__OFF_MASK;
        if (!copied && (l1e & Q2W__L1_RESERVED))
            q2w__finding(k, Q2W_FIND_RESERVED, l2, where, l1e, 0);
        if (!l2) continue;
        if (copied) {
            uint64_t c = l2 >> k->cb;
            if (!(l2 & (k->cs - 1)) && c < k->nclusters &&
                ((k->counts[c] == 1) != ((l1e & Q2W__COPIED) != 0))) {
                if (k->fix_copied) {
                    q2w__put64(k->a + (i % per) * 8, l1e ^ Q2W__COPIED);
                    a_dirty = 1;
                    k->res->copied_fixed++;
                } else {
                    q2w__finding(k, Q2W_FIND_COPIED, l2, where, l1e,
                                 k->counts[c]);
                }
            }
        } else {
            q2w__chk_ref(k, l2, where);
        }
        if (l2 & (k->cs - 1)) continue;
        if ((rc = q2w__chk_l2(k, l2, active, copied)) != Q2W_OK) return rc;
    }
    if (a_dirty && (rc = q2w__chk_write(k, chunk, k->a, chunk_len)) != Q2W_OK)
        return rc;
    return Q2W_OK;
}

/* Snapshot table: its clusters and every snapshot's L1 tables. */
static int q2w__chk_snapshots(q2w__chk *k)
{
    uint64_t pos = k->h.snapshots_offset, i;
    unsigned char e[40];
    int rc;
    for (i = 0; i < k->h.nb_snapshots; i++) {
        uint64_t l1o, len;
        uint32_t l1s, extra;
        uint16_t idl, nml;
        rc = q2w__chk_read(k, pos, e, 40);
        if (rc != Q2W_OK) return rc;
        l1o = q2w__be64(e);
        l1s = q2w__be32(e + 8);
        idl = q2w__be16(e + 12);
        nml = q2w__be16(e + 14);
        extra = q2w__be32(e + 36);
        len = 40u + extra + idl + nml;
        len = (len + 7) & ~7ull;
        if (extra > 1024 || (uint64_t)l1s * 8 > Q2W_MAX_L1_BYTES ||
            (l1o & (k->cs - 1))) {
            q2w__finding(k, Q2W_FIND_HEADER, l1o, pos, l1s, 0);
            return Q2W_OK;
        }
        if (k->h.version >= 3 && extra < 16)
            q2w__finding(k, Q2W_FIND_SNAPSHOT_INCOMPLETE, l1o, pos, extra, 0);
        q2w__chk_range(k, l1o, (uint64_t)l1s * 8, pos);
        rc = q2w__chk_l1(k, l1o, l1s, 0, 0);
        if (rc != Q2W_OK) return rc;
        pos += len;
    }
    q2w__chk_range(k, k->h.snapshots_offset, pos - k->h.snapshots_offset, 64);
    return Q2W_OK;
}

/* Persistent dirty bitmaps (only while autoclear bit 0 says they are
 * current): the directory, each bitmap table and its data clusters. What
 * does not validate is a finding, and nothing is freed after it. */
static int q2w__chk_bitmaps(q2w__chk *k)
{
    const q2w__hdr *h = &k->h;
    uint64_t pos = 0, i, where = h->bm_ext_pos;
    unsigned char d[24];
    int rc;
    if (h->bm_ext_len < 24 || h->bm_reserved || h->bm_nb == 0 ||
        h->bm_nb > 65535 || h->bm_dir_size > (64ull << 20) ||
        h->bm_dir_size < 24ull * h->bm_nb || (h->bm_dir_offset & (k->cs - 1)) ||
        h->bm_dir_offset >= Q2W_MAX_HOST_OFFSET) {
        q2w__finding(k, Q2W_FIND_BITMAP, h->bm_dir_offset, where,
                     h->bm_ext_len, h->bm_nb);
        k->unsure = 1;
        return Q2W_OK;
    }
    q2w__chk_range(k, h->bm_dir_offset, h->bm_dir_size, where);
    for (i = 0; i < h->bm_nb; i++) {
        uint64_t tab, len, j, chunk = 0;
        uint32_t tsize, extra;
        uint16_t name;
        where = h->bm_dir_offset + pos;
        if (pos + 24 > h->bm_dir_size) {
            q2w__finding(k, Q2W_FIND_BITMAP, where, h->bm_ext_pos, pos, i);
            k->unsure = 1;
            return Q2W_OK;
        }
        if ((rc = q2w__chk_read(k, where, d, sizeof d)) != Q2W_OK) return rc;
        tab = q2w__be64(d);
        tsize = q2w__be32(d + 8);
        name = q2w__be16(d + 18);
        extra = q2w__be32(d + 20);
        len = (24ull + extra + name + 7u) & ~7ull;
        if ((tab & (k->cs - 1)) || tab >= Q2W_MAX_HOST_OFFSET ||
            (uint64_t)tsize * 8 > (1ull << 30) || (tsize && !tab) ||
            extra > (1u << 20) || len > h->bm_dir_size - pos) {
            q2w__finding(k, Q2W_FIND_BITMAP, tab, where, tsize, i);
            k->unsure = 1;
            return Q2W_OK;
        }
        q2w__chk_range(k, tab, (uint64_t)tsize * 8, where);
        for (j = 0; j < tsize; j++) {
            uint64_t e, off;
            if (j % (k->cs / 8) == 0) {
                chunk = tsize - j < k->cs / 8 ? (tsize - j) * 8 : k->cs;
                rc = q2w__chk_read(k, tab + j * 8, k->b, (size_t)chunk);
                if (rc != Q2W_OK) return rc;
            }
            e = q2w__be64(k->b + (j % (k->cs / 8)) * 8);
            off = e & Q2W__OFF_MASK;
            /* bit 0 (all ones) only without a cluster; the rest reserved */
            if ((e & ~(Q2W__OFF_MASK | 1ull)) || (off && (e & 1ull))) {
                q2w__finding(k, Q2W_FIND_BITMAP, off, tab + j * 8, e, i);
                k->unsure = 1;
                continue;
            }
            if (off) q2w__chk_ref(k, off, tab + j * 8);
        }
        pos += len;
    }
    return Q2W_OK;
}

static int q2w__chk_setup(const q2w_io *io, q2w__chk *k, unsigned char *head,
                          q2w_error_info *e)
{
    int rc;
    memset(k, 0, sizeof *k);
    k->io = io;
    if (io->read(io->user, 0, head, 112) < 0)
        return q2w__hfail(e, Q2W_ERR_IO, "read", 0, 112);
    rc = q2w__parse_fixed(head, 112, &k->h, e);
    if (rc != Q2W_OK) return rc;
    k->cb = k->h.cluster_bits;
    k->cs = 1ull << k->cb;
    k->nclusters = (io->file_size + k->cs - 1) >> k->cb;
    return Q2W_OK;
}

Q2WDEF int q2w_check_work_size(const q2w_io *io, size_t *bytes,
                                q2w_error_info *err)
{
    q2w__chk k;
    unsigned char head[112];
    q2w_error_info dummy;
    int rc;
    if (!err) err = &dummy;
    memset(err, 0, sizeof *err);
    if (!io || !io->read || !bytes)
        return q2w__hfail(err, Q2W_ERR_ARG, "arguments", 0, 0);
    rc = q2w__chk_setup(io, &k, head, err);
    if (rc != Q2W_OK) return rc;
    *bytes = (size_t)(2 * k.cs + k.nclusters * 4);
    return Q2W_OK;
}

/* io->flush; a failure is a check error. */
static int q2w__chk_flush(q2w__chk *k)
{
    if (k->io->flush(k->io->user) < 0) {
        k->res->check_errors++;
        return q2w__hfail(&k->res->error, Q2W_ERR_IO, "flush", 0, 0);
    }
    return Q2W_OK;
}

/* What qcow2w cannot see into may hold clusters: say so, and let no
 * repair free anything (raising a refcount would be safe, but a new
 * refcount block could land on such a cluster). Returns where the last
 * such structure is named (0: none). */
static uint64_t q2w__chk_unknown(q2w__chk *k)
{
    uint64_t unsure_at = 0;
    if (k->h.n_unknown_ext) {
        q2w__finding(k, Q2W_FIND_UNKNOWN, 0, k->h.unknown_ext_pos,
                     k->h.unknown_ext_type, k->h.n_unknown_ext);
        k->unsure = 1;
        unsure_at = k->h.unknown_ext_pos;
    }
    if (k->h.version == 3 && (k->h.compatible & ~Q2W__COMPAT_KNOWN)) {
        q2w__finding(k, Q2W_FIND_UNKNOWN, 0, 80, k->h.compatible, 0);
        k->unsure = 1;
        unsure_at = 80;
    }
    if (k->h.version == 3 && (k->h.autoclear & ~Q2W__AUTOCLEAR_KNOWN)) {
        q2w__finding(k, Q2W_FIND_UNKNOWN, 0, 88, k->h.autoclear, 0);
        k->unsure = 1;
        unsure_at = 88;
    }
    return unsure_at;
}

/* Pass 1: count every reference path (header, refcount table and
 * blocks, L1/L2 tables, snapshots, bitmaps). A bitmap structure that does
 * not validate sets *unsure_at. */
static int q2w__chk_count_refs(q2w__chk *k, uint64_t rt_entries,
                               uint64_t *unsure_at)
{
    uint64_t i;
    int rc;
    q2w__chk_ref(k, 0, 0);
    q2w__chk_range(k, k->h.rt_offset, (uint64_t)k->h.rt_clusters * k->cs, 48);
    for (i = 0; i < rt_entries; i++) {
        uint64_t e, where = k->h.rt_offset + i * 8;
        if (i % (k->cs / 8) == 0 &&
            (rc = q2w__chk_read(k, where, k->a, (size_t)k->cs)) != Q2W_OK)
            return rc;
        e = q2w__be64(k->a + (i % (k->cs / 8)) * 8);
        if (e & Q2W__RT_RESERVED)
            q2w__finding(k, Q2W_FIND_RESERVED, e, where, e, 0);
        if (e & ~Q2W__RT_RESERVED)
            q2w__chk_ref(k, e & ~Q2W__RT_RESERVED, where);
    }
    q2w__chk_range(k, k->h.l1_offset, (uint64_t)k->h.l1_size * 8, 40);
    rc = q2w__chk_l1(k, k->h.l1_offset, k->h.l1_size, 1, 0);
    if (rc != Q2W_OK) return rc;
    if (k->h.nb_snapshots && (rc = q2w__chk_snapshots(k)) != Q2W_OK)
        return rc;
    if (k->h.bm_ext_pos && (k->h.autoclear & Q2W__AUTOCLEAR_BITMAPS)) {
        int was = k->unsure;
        if ((rc = q2w__chk_bitmaps(k)) != Q2W_OK) return rc;
        if (k->unsure && !was) *unsure_at = k->h.bm_ext_pos;
    }
    return Q2W_OK;
}

/* References without a refcount block (a lazy-refcount crash) in the
 * range of epb clusters from `first`: a new block on the first free
 * cluster of its own range, counting itself, built in k->b (it is
 * written, flushed, then entered in the table). Returns its cluster, or 0
 * when the range needs none or has no free cluster. */
static uint64_t q2w__chk_make_block(q2w__chk *k, uint64_t first, uint64_t epb)
{
    uint64_t c, want = 0, made = 0;
    for (c = first; c < first + epb && c < k->nclusters; c++)
        want |= k->counts[c];
    for (c = first ? first : 1; want && c < first + epb; c++)
        if (c >= k->nclusters || !k->counts[c]) {
            made = c;
            break;
        }
    if (made) {
        memset(k->b, 0, (size_t)k->cs);
        q2w__rc_set(k->b, made - first, k->h.refcount_order, 1);
        if (made < k->nclusters) k->counts[made] = 1;
    }
    return made;
}

/* The refcounts of the block at blk (in k->b; 0: none) for the epb
 * clusters from `first` against counts[]: findings, and with `repair`
 * leaks lowered, with `all` counts below their references raised; then
 * counts[] holds the stored values. made: the block q2w__chk_make_block
 * made here, or 0. *end: one past the last cluster counted or used.
 * Returns whether k->b changed. */
static int q2w__chk_block(q2w__chk *k, uint64_t blk, uint64_t first,
                          uint64_t made, uint64_t epb, unsigned repair,
                          int all, uint64_t *end)
{
    q2w_check_result *res = k->res;
    uint64_t j;
    int dirty = 0;
    for (j = 0; j < epb && (blk || first + j < k->nclusters); j++) {
        uint64_t c = first + j;
        uint64_t stored, have, at;
        if (blk && c >= k->nclusters && c != made &&
            ((j << k->h.refcount_order) & 7) == 0) {
            /* Past the end of the file only non-zero entries matter:
             * skip zero bytes (a 2 MiB block of 1-bit refcounts has
             * 16 Mi entries). */
            size_t b = (size_t)((j << k->h.refcount_order) >> 3), nj;
            while (b < k->cs && k->b[b] == 0) b++;
            nj = (size_t)(((uint64_t)b << 3) >> k->h.refcount_order);
            if (made > c && nj > made - first) nj = (size_t)(made - first);
            if (nj > j) {
                j = nj - 1;
                continue;
            }
        }
        stored = blk ? q2w__rc_get(k->b, j, k->h.refcount_order) : 0;
        have = c < k->nclusters ? k->counts[c] : (uint64_t)(made && c == made);
        at = blk ? blk + ((j << k->h.refcount_order) >> 3) : 0;
        if (stored < have) {
            q2w__finding(k, Q2W_FIND_REFCOUNT, c << k->cb, at, stored,
                         have);
            if (all && blk && have <= q2w__rc_max(k->h.refcount_order)) {
                q2w__rc_set(k->b, j, k->h.refcount_order, have);
                res->corruptions_fixed++;
                dirty = 1;
                stored = have;
            }
        } else if (stored > have) {
            q2w__finding(k, Q2W_FIND_LEAK, c << k->cb, at, stored, have);
            if (repair && blk) {
                q2w__rc_set(k->b, j, k->h.refcount_order, have);
                res->leaks_fixed++;
                dirty = 1;
                stored = have;
            }
        }
        if (c >= k->nclusters) {
            if (have) *end = c + 1;   /* a block made past the end */
            continue;
        }
        /* the end qemu reports: the last cluster counted or used */
        if (stored || have) *end = c + 1;
        k->counts[c] = stored > 0xfffffffeu ? 0xfffffffeu : (uint32_t)stored;
    }
    return dirty;
}

/* Pass 2: stored refcounts against the counts, a table entry (a refcount
 * block) at a time; counts[] then holds the stored values (after repair)
 * for the COPIED pass. *end as q2w__chk_block. */
static int q2w__chk_refcounts(q2w__chk *k, uint64_t rt_entries,
                              unsigned repair, int all, uint64_t *end)
{
    uint64_t i, epb_bits, epb;
    int rc;
    epb_bits = k->cb + 3u - k->h.refcount_order;
    epb = 1ull << epb_bits;
    for (i = 0; i < rt_entries; i++) {
        uint64_t e, blk, first = i << epb_bits, made = 0, rt_at;
        uint64_t per = k->cs / 8;
        int dirty = 0;
        rt_at = k->h.rt_offset + (i - i % per) * 8;
        if (i % per == 0 &&
            (rc = q2w__chk_read(k, rt_at, k->a, (size_t)k->cs)) != Q2W_OK)
            return rc;
        e = q2w__be64(k->a + (i % per) * 8);
        blk = e & ~Q2W__RT_RESERVED;
        if (blk & (k->cs - 1)) blk = 0;
        /* Past the end of the file only stored refcounts matter: a count
         * there is a leak (it becomes visible once the file grows). */
        if (!blk && first >= k->nclusters) continue;
        if (!blk && all && !e) {
            made = q2w__chk_make_block(k, first, epb);
            if (made) {
                blk = made << k->cb;
                dirty = 1;
            }
        } else if (blk) {
            rc = q2w__chk_read(k, blk, k->b, (size_t)k->cs);
            if (rc != Q2W_OK) return rc;
        }
        if (q2w__chk_block(k, blk, first, made, epb, repair, all, end))
            dirty = 1;
        if (dirty && (rc = q2w__chk_write(k, blk, k->b, k->cs)) != Q2W_OK)
            return rc;
        if (made) {
            if ((rc = q2w__chk_flush(k)) != Q2W_OK) return rc;
            q2w__put64(k->a + (i % per) * 8, blk);
            if ((rc = q2w__chk_write(k, rt_at, k->a, k->cs)) != Q2W_OK)
                return rc;
        }
    }
    /* Clusters the table cannot describe at all (a repair would have to
     * grow the refcount table: left to qemu-img check -r all). */
    for (i = rt_entries << epb_bits; i < k->nclusters; i++)
        if (k->counts[i]) {
            q2w__finding(k, Q2W_FIND_REFCOUNT, i << k->cb, 0, 0, k->counts[i]);
            *end = i + 1;
            k->counts[i] = 0;
        }
    return Q2W_OK;
}

/* Dirty bit: cleared, durably after the refcounts, once everything
 * found was repaired. */
static int q2w__chk_clear_dirty(q2w__chk *k)
{
    unsigned char f[8];
    int rc;
    q2w__put64(f, k->h.incompatible & ~Q2W__INCOMPAT_DIRTY);
    if ((rc = q2w__chk_write(k, 72, f, 8)) != Q2W_OK) return rc;
    if ((rc = q2w__chk_flush(k)) != Q2W_OK) return rc;
    k->res->dirty_cleared = 1;
    return Q2W_OK;
}

Q2WDEF int q2w_check(const q2w_io *io, void *work, size_t work_len,
                     unsigned flags, q2w_check_result *res)
{
    q2w__chk k;
    unsigned char head[112];
    uint64_t rt_entries, end = 0, unsure_at;
    unsigned repair = flags & (Q2W_CHECK_REPAIR_LEAKS | Q2W_CHECK_REPAIR_ALL);
    int rc, all = (flags & Q2W_CHECK_REPAIR_ALL) != 0;
    if (!res) return Q2W_ERR_ARG;
    memset(res, 0, sizeof *res);
    if (!io || !io->read || !work)
        return q2w__hfail(&res->error, Q2W_ERR_ARG, "arguments", 0, 0);
    if (repair && (!io->write || !io->flush))
        return q2w__hfail(&res->error, Q2W_ERR_ARG, "io.write", 0, 0);
    rc = q2w__chk_setup(io, &k, head, &res->error);
    if (rc != Q2W_OK) {
        res->check_errors = rc == Q2W_ERR_IO; /* the header's read failed */
        return rc;
    }
    k.res = res;
    if (work_len < 2 * k.cs + k.nclusters * 4) {
        res->error.needed = 2 * k.cs + k.nclusters * 4;
        return q2w__hfail(&res->error, Q2W_ERR_NOMEM, "work", 0,
                          res->error.needed);
    }
    k.a = (unsigned char *)work;
    k.b = k.a + k.cs;
    k.counts = (uint32_t *)(void *)(k.b + k.cs);
    memset(k.counts, 0, (size_t)(k.nclusters * 4));
    rc = q2w__chk_read(&k, 0, k.a, (size_t)k.cs);
    if (rc != Q2W_OK) return rc;
    rc = q2w__parse_exts(k.a, (size_t)k.cs, &k.h, &res->error);
    if (rc != Q2W_OK) return rc;
    res->total_clusters = (k.h.size + k.cs - 1) >> k.cb;
    unsure_at = q2w__chk_unknown(&k);
    rt_entries = (uint64_t)k.h.rt_clusters * (k.cs / 8);
    if ((rc = q2w__chk_count_refs(&k, rt_entries, &unsure_at)) != Q2W_OK)
        return rc;
    if (k.unsure && repair) {
        repair = 0;
        all = 0;
    }
    rc = q2w__chk_refcounts(&k, rt_entries, repair, all, &end);
    if (rc != Q2W_OK) return rc;
    res->image_end_offset = end << k.cb;
    if ((res->leaks_fixed || res->corruptions_fixed) &&
        (rc = q2w__chk_flush(&k)) != Q2W_OK)
        return rc;
    /* Pass 3: COPIED in the active tables. With leaks repaired and
     * nothing else wrong, a flag the repair made wrong (a refcount back to
     * 1) is set right, as qemu-img check -r leaks does; -r all sets every
     * flag right from the repaired refcounts. */
    k.fix_copied = (all || (repair && res->corruptions == 0)) &&
                   !res->check_errors;
    rc = q2w__chk_l1(&k, k.h.l1_offset, k.h.l1_size, 1, 1);
    if (rc == Q2W_OK && res->copied_fixed) rc = q2w__chk_flush(&k);
    if (rc != Q2W_OK) return rc;
    if (all && (k.h.incompatible & Q2W__INCOMPAT_DIRTY) &&
        res->corruptions == res->corruptions_fixed && !res->check_errors &&
        (rc = q2w__chk_clear_dirty(&k)) != Q2W_OK)
        return rc;
    if (k.unsure && (flags & (Q2W_CHECK_REPAIR_LEAKS | Q2W_CHECK_REPAIR_ALL)) &&
        (res->leaks || res->corruptions))
        return q2w__hfail(&res->error, Q2W_ERR_UNSUPPORTED,
                          "repair: a structure qcow2w does not understand",
                          unsure_at, 0);
    return Q2W_OK;
}

Q2WDEF int q2w_repair_leaks(const q2w_io *io, void *work, size_t work_len,
                            q2w_check_result *res)
{
    return q2w_check(io, work, work_len, Q2W_CHECK_REPAIR_LEAKS, res);
}

Q2WDEF const char *q2w_finding_name(int kind)
{
    switch (kind) {
    case Q2W_FIND_LEAK: return "leak";
    case Q2W_FIND_REFCOUNT: return "refcount too low";
    case Q2W_FIND_COPIED: return "COPIED flag wrong";
    case Q2W_FIND_UNALIGNED: return "unaligned offset";
    case Q2W_FIND_PAST_EOF: return "reference past end of file";
    case Q2W_FIND_RESERVED: return "reserved bits set";
    case Q2W_FIND_ZERO_FLAG_V2: return "zero flag in a v2 image";
    case Q2W_FIND_HEADER: return "invalid snapshot or header entry";
    case Q2W_FIND_BITMAP: return "invalid bitmap entry";
    case Q2W_FIND_UNKNOWN: return "structure not understood";
    case Q2W_FIND_SNAPSHOT_INCOMPLETE: return "snapshot entry incomplete";
    default: return "unknown finding";
    }
}

/* ---- POSIX executor --------------------------------------------------------- */
#ifndef Q2W_NO_STDIO
#include <errno.h>
#include <sys/types.h>
#include <unistd.h>
/* glibc declares pread/pwrite only under POSIX 2008 or X/Open 500, as
 * its <features.h> decided when the first libc header was included: ask
 * it, not _POSIX_C_SOURCE, which may have been defined after that */
#if defined(__GLIBC__) && !defined(__USE_XOPEN2K8) && !defined(__USE_UNIX98)
#error "qcow2w.h: the POSIX executor needs _POSIX_C_SOURCE >= 200809L: include qcow2w.h first in this file, define it before any #include, or define Q2W_NO_STDIO"
#else /* (the executor is left out after the #error: one message, not ten) */

static int q2w__pread_all(int fd, uint64_t off, unsigned char *dst, size_t len)
{
    while (len) {
        ssize_t got = pread(fd, dst, len, (off_t)off);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -errno;
        if (got == 0) { memset(dst, 0, len); return 0; } /* past EOF: zeros */
        dst += got;
        off += (uint64_t)got;
        len -= (size_t)got;
    }
    return 0;
}

static int q2w__pwrite_all(int fd, uint64_t off, const unsigned char *src,
                           size_t len)
{
    static const unsigned char zeros[65536] = {0};
    while (len) {
        size_t n = len;
        const unsigned char *from = src;
        ssize_t put;
        if (!src) {
            /* pieces end on 64 KiB boundaries: no sector is written by two
             * calls (a crash between them would leave it half old) */
            size_t to_edge = sizeof zeros - (size_t)(off % sizeof zeros);
            from = zeros;
            if (n > to_edge) n = to_edge;
        }
        put = pwrite(fd, from, n, (off_t)off);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return put < 0 ? -errno : -EIO;
        if (src) src += put;
        off += (uint64_t)put;
        len -= (size_t)put;
    }
    return 0;
}

Q2WDEF int q2w_pread_full(int fd, uint64_t off, void *dst, size_t len)
{
    return q2w__pread_all(fd, off, (unsigned char *)dst, len);
}

Q2WDEF int q2w_pwrite_full(int fd, uint64_t off, const void *src, size_t len)
{
    return q2w__pwrite_all(fd, off, (const unsigned char *)src, len);
}

static int q2w__posix_ops(const q2w_op *op, size_t n, int fd,
                          const q2w_backing_reader *backing, unsigned flags)
{
    size_t i, j, len;
    for (i = 0; i < n; i = j) {
        int rc = 0;
        /* Neighbouring reads or writes that continue each other both in
         * the file and in memory go as one call (a run of clusters of an
         * import is one pwrite, not one per cluster); order is kept. */
        len = op[i].len;
        for (j = i + 1; j < n && op[j].kind == op[i].kind &&
                        (op[i].kind == Q2W_OP_READ ||
                         (op[i].kind == Q2W_OP_WRITE && op[i].src)) &&
                        op[j].off == op[i].off + len &&
                        (op[i].kind == Q2W_OP_READ
                             ? op[j].dst == op[i].dst + len
                             : op[j].src == op[i].src + len);
             j++)
            len += op[j].len;
        switch (op[i].kind) {
        case Q2W_OP_READ:
            rc = q2w__pread_all(fd, op[i].off, op[i].dst, len);
            break;
        case Q2W_OP_WRITE:
            rc = q2w__pwrite_all(fd, op[i].off, op[i].src, len);
            break;
        case Q2W_OP_FLUSH:
            if (!(flags & Q2W_POSIX_NO_FLUSH))
                rc = fdatasync(fd) < 0 ? -errno : 0;
            break;
        case Q2W_OP_BACKING_READ:
            if (backing && backing->read)
                rc = backing->read(backing->user, op[i].off, op[i].dst,
                                   op[i].len);
            else
                memset(op[i].dst, 0, op[i].len);
            break;
        default:
            rc = -EINVAL;
        }
        if (rc < 0) return rc;
    }
    return 0;
}

Q2WDEF int q2w_posix_exec(q2w_image *img, int fd,
                          const q2w_backing_reader *backing, unsigned flags)
{
    size_t n;
    const q2w_op *op = q2w_batch(img, &n);
    return q2w__posix_ops(op, n, fd, backing, flags);
}

Q2WDEF int q2w_posix_job_run(q2w_job *job, const q2w_job_fd files[3],
                             void (*progress)(void *user, uint64_t done, uint64_t total),
                             void *user, int rc)
{
    while (rc == Q2W_PENDING) {
        size_t n;
        int file = Q2W_JOB_TOP;
        const q2w_op *op = q2w_job_batch(job, &n, &file);
        rc = q2w_job_resume(job, file < 0 || file > 2
                                     ? -EINVAL
                                     : q2w__posix_ops(op, n, files[file].fd, files[file].backing, 0));
        if (progress) {
            uint64_t done, total;
            q2w_job_progress(job, &done, &total);
            progress(user, done, total);
        }
    }
    return rc;
}

Q2WDEF int q2w_posix_run_flags(q2w_image *img, int fd,
                               const q2w_backing_reader *backing,
                               unsigned flags, int rc)
{
    while (rc == Q2W_PENDING)
        rc = q2w_resume(img, q2w_posix_exec(img, fd, backing, flags));
    return rc;
}

Q2WDEF int q2w_posix_run(q2w_image *img, int fd,
                         const q2w_backing_reader *backing, int rc)
{
    return q2w_posix_run_flags(img, fd, backing, 0, rc);
}

static int q2w__fd_read(void *user, uint64_t off, void *dst, size_t len)
{
    return q2w__pread_all(((q2w_fdbox *)user)->fd, off, (unsigned char *)dst,
                          len);
}
static int q2w__fd_write(void *user, uint64_t off, const void *src, size_t len)
{
    return q2w__pwrite_all(((q2w_fdbox *)user)->fd, off,
                           (const unsigned char *)src, len);
}
static int q2w__fd_flush(void *user)
{
    return fdatasync(((q2w_fdbox *)user)->fd) < 0 ? -errno : 0;
}

Q2WDEF void q2w_posix_io(q2w_io *io, int fd, q2w_fdbox *box)
{
    off_t end = lseek(fd, 0, SEEK_END);
    box->fd = fd;
    io->read = q2w__fd_read;
    io->write = q2w__fd_write;
    io->flush = q2w__fd_flush;
    io->user = box;
    io->file_size = end > 0 ? (uint64_t)end : 0;
}
#endif /* the POSIX check */
#endif /* Q2W_NO_STDIO */

#ifdef __cplusplus
}
#endif
#endif /* QCOW2W_IMPLEMENTATION */

/* REVISION HISTORY
 *   0.1.0 (2026-11-29)  first release: create, open, read, write,
 *                       write_zeroes, discard, flush, grow, refcount block
 *                       and table growth, checker, POSIX executor;
 *                       internal snapshots and copy-on-write.
 *
 * LICENCE: this software is available under either of these licences, at
 * your choice.
 *
 * ALTERNATIVE A - MIT License
 * Copyright (c) 2026 the alk authors
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to
 * deal in the Software without restriction, including without limitation the
 * rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
 * sell copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 * The above copyright notice and this permission notice shall be included in
 * all copies or substantial portions of the Software.
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
 * FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
 * IN THE SOFTWARE.
 *
 * ALTERNATIVE B - Public Domain (www.unlicense.org)
 * This is free and unencumbered software released into the public domain.
 * Anyone is free to copy, modify, publish, use, compile, sell, or distribute
 * this software, either in source code form or as a compiled binary, for any
 * purpose, commercial or non-commercial, and by any means.
 * In jurisdictions that recognize copyright laws, the author or authors of
 * this software dedicate any and all copyright interest in the software to
 * the public domain. We make this dedication for the benefit of the public at
 * large and to the detriment of our heirs and successors. We intend this
 * dedication to be an overt act of relinquishment in perpetuity of all
 * present and future rights to this software under copyright law.
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
 * ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
 * CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
 */

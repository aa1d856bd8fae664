//! Writing the objects a merge made as one pack. A sync that unites two
//! diverged logs rewrites hundreds of segments and the trees above them;
//! as loose objects each is a new file (a new inode, a new deflate stream
//! with its tables), which is most of a merge's own time. Written into
//! memory ([`gix::Repository::with_object_memory`]) and then here, they
//! are one `.pack` and its `.idx` (git's version 2 formats), compressed
//! by one deflate stream reset between objects.
//!
//! Crash safety is the loose objects': the pack is written under a
//! temporary name, renamed into `objects/pack/`, and its index renamed
//! after it (a reader finds a pack through its index, so it never sees a
//! partial one); the ref that names the objects moves only after both.
//! A killed writer leaves at most a temporary file, which the sweep
//! removes ([`super::sweep`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::odb::memory::Storage;

use super::{StoreError, git};

/// How many bytes of objects a merge keeps in memory before it writes
/// them out as a pack and goes on: memory stays bounded by one segment
/// and this, however many segments a merge rewrites.
pub(super) const PENDING_BYTES: usize = 64 << 20;

/// Write the objects `repo` holds in memory (its object memory is left
/// enabled and empty) as one pack, leaving out any the object database
/// holds already. Nothing is written when none is new.
pub(super) fn flush(repo: &gix::Repository) -> Result<(), StoreError> {
    let Some(objects) = repo.objects.reset_object_memory() else {
        return Ok(());
    };
    write(repo, objects).map(|_| ())
}

/// Write `objects` as one pack under `repo`'s `objects/pack/`, leaving
/// out those the object database holds already; returns the pack's
/// path, or `None` when every object was there.
pub(super) fn write(
    repo: &gix::Repository,
    mut objects: Storage,
) -> Result<Option<PathBuf>, StoreError> {
    let mut objects: Vec<(ObjectId, (gix::object::Kind, Vec<u8>))> = objects
        .drain()
        .filter(|(id, _)| !repo.objects.exists_without_refresh(id))
        .collect();
    if objects.is_empty() {
        return Ok(None);
    }
    objects.sort_by_key(|(id, _)| *id);
    let objects_dir = repo.objects.store_ref().path().to_path_buf();
    let pack_dir = objects_dir.join("pack");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    };
    std::fs::create_dir_all(&pack_dir).map_err(io(&pack_dir))?;
    let kind = repo.object_hash();
    // Under the objects folder with gix's temporary prefix: the sweep
    // removes what a killed writer leaves.
    let tmp_pack = Temporary::create(&objects_dir)?;
    let mut out = Hashed::new(
        std::io::BufWriter::with_capacity(1 << 16, &tmp_pack.file),
        kind,
    );
    out.write_all(b"PACK")
        .and_then(|()| out.write_all(&2u32.to_be_bytes()))
        .and_then(|()| out.write_all(&(objects.len() as u32).to_be_bytes()))
        .map_err(io(&tmp_pack.path))?;
    let mut deflate = gix::zlib::stream::deflate::Compress::new(
        gix::zlib::Compression::new(1).expect("level 1 is a zlib level"),
    );
    let mut entry = Vec::new();
    let mut index = Vec::with_capacity(objects.len());
    for (id, (object_kind, data)) in &objects {
        entry.clear();
        entry_header(&mut entry, type_number(*object_kind), data.len() as u64);
        compress(&mut deflate, data, &mut entry)?;
        index.push((*id, crc32fast::hash(&entry), out.written));
        out.write_all(&entry).map_err(io(&tmp_pack.path))?;
    }
    let (writer, pack_sum) = out.finish()?;
    let mut writer = writer;
    writer
        .write_all(pack_sum.as_slice())
        .and_then(|()| writer.flush())
        .map_err(io(&tmp_pack.path))?;
    drop(writer);
    let idx = index_bytes(&index, &pack_sum, kind)?;
    let name = format!("pack-{}", pack_sum.to_hex());
    let pack_path = pack_dir.join(format!("{name}.pack"));
    let idx_path = pack_dir.join(format!("{name}.idx"));
    let mut tmp_idx = Temporary::create(&objects_dir)?;
    tmp_idx.file.write_all(&idx).map_err(io(&tmp_idx.path))?;
    // The pack first: a reader finds a pack through its index.
    tmp_pack.persist(&pack_path)?;
    tmp_idx.persist(&idx_path)?;
    Ok(Some(pack_path))
}

/// Write `objects` as loose objects under `repo`'s `objects/`, leaving
/// out those the object database holds already: what an append of a few
/// lines writes (a pack each would pile up packs, one per note). Written
/// like gix writes them (zlib under a temporary name in `objects/`, then
/// renamed to its id's place, read-only). An object of up to
/// [`STORED_UP_TO`] bytes is written in stored (uncompressed) deflate
/// blocks, as git writes loose objects with `core.looseCompression = 0`:
/// a deflate stream's creation maps and clears about 300 KiB of tables
/// and each reset 128 KiB again, a tenth of a note's page faults for
/// objects of a few KiB that the next pack compresses anyway. Larger
/// objects share one deflate stream, reset between them. An object is
/// only ever renamed to a name nothing holds yet, so no rename replaces a
/// file.
pub(super) fn write_loose(repo: &gix::Repository, mut objects: Storage) -> Result<(), StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    let objects: Vec<(ObjectId, (gix::object::Kind, Vec<u8>))> = objects
        .drain()
        .filter(|(id, _)| !repo.objects.exists_without_refresh(id))
        .collect();
    if objects.is_empty() {
        return Ok(());
    }
    let objects_dir = repo.objects.store_ref().path().to_path_buf();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    };
    let mut deflate = None;
    let (mut plain, mut packed) = (Vec::new(), Vec::new());
    for (id, (kind, data)) in &objects {
        plain.clear();
        plain.extend_from_slice(kind.as_bytes());
        plain.push(b' ');
        plain.extend_from_slice(data.len().to_string().as_bytes());
        plain.push(0);
        plain.extend_from_slice(data);
        packed.clear();
        if plain.len() <= STORED_UP_TO {
            stored(&plain, &mut packed);
        } else {
            let deflate = deflate.get_or_insert_with(|| {
                gix::zlib::stream::deflate::Compress::new(
                    gix::zlib::Compression::new(1).expect("level 1 is a zlib level"),
                )
            });
            compress(deflate, &plain, &mut packed)?;
        }
        let hex = id.to_hex().to_string();
        let dir = objects_dir.join(&hex[..2]);
        let path = dir.join(&hex[2..]);
        let tmp = Temporary::create_with(&objects_dir, "loose", |o| {
            o.mode(0o444);
        })?;
        (&tmp.file).write_all(&packed).map_err(io(&tmp.path))?;
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(StoreError::Io {
                    path: dir,
                    source: e,
                });
            }
            _ => {}
        }
        tmp.persist(&path)?;
    }
    Ok(())
}

/// A file being written under a temporary name, removed when dropped
/// unless it was given its name.
struct Temporary {
    path: PathBuf,
    file: std::fs::File,
    named: bool,
}

impl Temporary {
    fn create(dir: &Path) -> Result<Self, StoreError> {
        Self::create_with(dir, "pack", |_| {})
    }

    /// Created under `.tmp-kapi-<what>-…` (the sweep's `.tmp` prefix),
    /// with `options` further set.
    fn create_with(
        dir: &Path,
        what: &str,
        options: impl Fn(&mut std::fs::OpenOptions),
    ) -> Result<Self, StoreError> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        loop {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = dir.join(format!(
                ".tmp-kapi-{what}-{}-{nanos}-{n}",
                std::process::id()
            ));
            let mut open = std::fs::OpenOptions::new();
            open.write(true).create_new(true);
            options(&mut open);
            match open.open(&path) {
                Ok(file) => {
                    return Ok(Self {
                        path,
                        file,
                        named: false,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(StoreError::Io { path, source }),
            }
        }
    }

    fn persist(mut self, to: &Path) -> Result<(), StoreError> {
        std::fs::rename(&self.path, to).map_err(|source| StoreError::Io {
            path: to.to_path_buf(),
            source,
        })?;
        self.named = true;
        Ok(())
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.named {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A pack entry's type number.
fn type_number(kind: gix::object::Kind) -> u8 {
    match kind {
        gix::object::Kind::Commit => 1,
        gix::object::Kind::Tree => 2,
        gix::object::Kind::Blob => 3,
        gix::object::Kind::Tag => 4,
    }
}

/// A pack entry's header: its type and its inflated size, seven bits at
/// a time after the first four.
fn entry_header(out: &mut Vec<u8>, type_number: u8, mut size: u64) {
    let mut byte = (type_number << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size != 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
}

/// Deflate `data` as one zlib stream appended to `out`, the compressor
/// reset for the next.
/// Objects up to this size (header included) are written loose without
/// compression.
const STORED_UP_TO: usize = 64 * 1024;

/// `data` as a zlib stream of stored deflate blocks (RFC 1950, RFC 1951
/// 3.2.4): the header of a 32 KiB window at the fastest level, blocks of
/// at most 65,535 bytes (an empty final block for no data), the Adler-32
/// of `data`.
fn stored(data: &[u8], out: &mut Vec<u8>) {
    out.reserve(data.len() + 5 * (data.len() / 65_535 + 1) + 6);
    out.extend_from_slice(&[0x78, 0x01]);
    let mut blocks = data.chunks(65_535).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        out.push(u8::from(blocks.peek().is_none()));
        let len = u16::try_from(block.len()).expect("a block holds at most 65,535 bytes");
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&zlib_rs::adler32::adler32(1, data).to_be_bytes());
}

fn compress(
    deflate: &mut gix::zlib::stream::deflate::Compress,
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), StoreError> {
    use gix::zlib::Status;
    use gix::zlib::stream::deflate::FlushCompress;
    // A compressor is reset only once it has been used: a reset clears
    // tables as large as its creation did.
    if deflate.total_in() != 0 || deflate.total_out() != 0 {
        deflate.reset();
    }
    let (mut read, start) = (0usize, out.len());
    // Room for the whole stream at once, usually: deflate's bound.
    out.reserve(data.len() + data.len() / 1000 + 64);
    loop {
        let (before_in, before_out) = (deflate.total_in(), deflate.total_out());
        let spare = out.capacity() - out.len();
        let at = out.len();
        out.resize(at + spare.max(64), 0);
        let status = deflate
            .compress(&data[read..], &mut out[at..], FlushCompress::Finish)
            .map_err(git("compressing a pack entry"))?;
        read += (deflate.total_in() - before_in) as usize;
        let wrote = (deflate.total_out() - before_out) as usize;
        out.truncate(at + wrote);
        match status {
            Status::StreamEnd => break,
            Status::Ok | Status::BufError => {
                out.reserve(64.max(data.len() - read));
            }
        }
    }
    debug_assert!(out.len() > start);
    Ok(())
}

/// The version 2 index of a pack: fan-out, sorted ids, each entry's CRC-32
/// and offset (those past 2 GiB in a table of their own), the pack's
/// checksum and its own.
fn index_bytes(
    entries: &[(ObjectId, u32, u64)],
    pack_sum: &ObjectId,
    kind: gix::hash::Kind,
) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::with_capacity(8 + 256 * 4 + entries.len() * (kind.len_in_bytes() + 8));
    out.extend_from_slice(b"\xfftOc");
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (id, _, _) in entries {
        fanout[id.as_slice()[0] as usize] += 1;
    }
    let mut total = 0;
    for count in fanout {
        total += count;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for (id, _, _) in entries {
        out.extend_from_slice(id.as_slice());
    }
    for (_, crc, _) in entries {
        out.extend_from_slice(&crc.to_be_bytes());
    }
    let mut large = Vec::new();
    for (_, _, offset) in entries {
        let small = match u32::try_from(*offset) {
            Ok(o) if o < 0x8000_0000 => o,
            _ => {
                large.push(*offset);
                0x8000_0000 | (large.len() as u32 - 1)
            }
        };
        out.extend_from_slice(&small.to_be_bytes());
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(pack_sum.as_slice());
    let mut hasher = gix::hash::hasher(kind);
    hasher.update(&out);
    let own = hasher
        .try_finalize()
        .map_err(git("hashing a pack's index"))?;
    out.extend_from_slice(own.as_slice());
    Ok(out)
}

/// A writer that hashes what it writes and counts it.
struct Hashed<W> {
    inner: W,
    hasher: gix::hash::Hasher,
    written: u64,
}

impl<W: Write> Hashed<W> {
    fn new(inner: W, kind: gix::hash::Kind) -> Self {
        Self {
            inner,
            hasher: gix::hash::hasher(kind),
            written: 0,
        }
    }

    fn finish(self) -> Result<(W, ObjectId), StoreError> {
        let sum = self.hasher.try_finalize().map_err(git("hashing a pack"))?;
        Ok((self.inner, sum))
    }
}

impl<W: Write> Write for Hashed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Objects written into memory and then as a pack read back as they
    /// were written, through gix and through git itself (`git verify-pack`
    /// checks every entry, its CRC and both checksums).
    #[test]
    fn objects_written_as_a_pack_read_back_through_gix_and_git() {
        let dir = tempfile::tempdir().unwrap();
        let repo = gix::init_bare(dir.path()).unwrap();
        let held = repo.write_blob(b"held already\n").unwrap().detach();
        let mem = repo.clone().with_object_memory();
        let mut blobs = Vec::new();
        for n in 0..300u32 {
            // Sizes on both sides of the header's 4- and 11-bit steps, and
            // one larger than the compressor's first guess.
            let body = format!("{n}\n").repeat(1 + (n as usize * 37) % 5000);
            blobs.push((mem.write_blob(body.as_bytes()).unwrap().detach(), body));
        }
        let again = mem.write_blob(b"held already\n").unwrap().detach();
        assert_eq!(again, held);
        let tree = gix::objs::Tree {
            entries: vec![gix::objs::tree::Entry {
                mode: gix::objs::tree::EntryKind::Blob.into(),
                filename: "a".into(),
                oid: blobs[0].0,
            }],
        };
        let tree_id = mem.write_object(&tree).unwrap().detach();
        assert!(!repo.has_object(blobs[0].0), "still in memory only");
        let objects = mem.objects.reset_object_memory().unwrap();
        let pack = write(&repo, objects).unwrap().expect("new objects");
        // The object held loose already is not written again.
        let entries = std::fs::read(pack.with_extension("idx")).unwrap();
        let count = u32::from_be_bytes(entries[8 + 255 * 4..8 + 256 * 4].try_into().unwrap());
        assert_eq!(count, 301);
        let fresh = gix::open(dir.path()).unwrap();
        for (id, body) in &blobs {
            assert_eq!(fresh.find_blob(*id).unwrap().data, body.as_bytes());
        }
        assert_eq!(
            fresh
                .find_tree(tree_id)
                .unwrap()
                .decode()
                .unwrap()
                .entries
                .len(),
            1
        );
        // The handle that wrote it finds it too (its store looks again).
        assert!(repo.has_object(tree_id));
        let verify = std::process::Command::new("git")
            .args(["verify-pack", "-v"])
            .arg(pack.with_extension("idx"))
            .output()
            .unwrap();
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stderr)
        );
        // Nothing new: nothing written.
        assert_eq!(
            write(&repo, mem.objects.reset_object_memory().unwrap()).unwrap(),
            None
        );
    }

    /// Loose objects, stored or deflated by size, read back as they were
    /// written through gix and through git (`git fsck --strict` inflates
    /// and hashes every loose object; `git cat-file` prints one).
    #[test]
    fn loose_objects_read_back_through_gix_and_git() {
        let dir = tempfile::tempdir().unwrap();
        let repo = gix::init_bare(dir.path()).unwrap();
        let mem = repo.clone().with_object_memory();
        let mut blobs = Vec::new();
        // Empty; one block; a block's edge; two and three blocks; either
        // side of the stored limit (its header counted); deflated.
        for size in [
            0,
            1,
            1000,
            65_535 - 9,
            65_535 - 8,
            65_535 - 7,
            70_000,
            140_000,
            STORED_UP_TO - 11,
            STORED_UP_TO - 10,
            STORED_UP_TO,
            300_000,
        ] {
            let body: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            blobs.push((mem.write_blob(&body).unwrap().detach(), body));
        }
        write_loose(&repo, mem.objects.reset_object_memory().unwrap()).unwrap();
        let fresh = gix::open(dir.path()).unwrap();
        for (id, body) in &blobs {
            assert_eq!(fresh.find_blob(*id).unwrap().data, *body, "{}", body.len());
        }
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        };
        git(&["fsck", "--strict", "--no-dangling"]);
        assert_eq!(
            git(&["cat-file", "blob", &blobs[3].0.to_hex().to_string()]),
            blobs[3].1
        );
        // A small object is stored: its file holds its bytes as they are.
        let hex = blobs[2].0.to_hex().to_string();
        let file =
            std::fs::read(dir.path().join("objects").join(&hex[..2]).join(&hex[2..])).unwrap();
        assert!(file.windows(blobs[2].1.len()).any(|w| w == blobs[2].1));
    }

    #[test]
    fn an_offset_past_two_gibibytes_goes_to_the_large_offset_table() {
        let id = |b: u8| ObjectId::from_bytes_or_panic(&[b; 20]);
        let entries = [(id(1), 7, 12), (id(2), 8, 0x1_0000_0000)];
        let sum = id(9);
        let idx = index_bytes(&entries, &sum, gix::hash::Kind::Sha1).unwrap();
        let offsets = 8 + 256 * 4 + 2 * 20 + 2 * 4;
        assert_eq!(&idx[offsets..offsets + 4], &12u32.to_be_bytes());
        assert_eq!(
            &idx[offsets + 4..offsets + 8],
            &0x8000_0000u32.to_be_bytes()
        );
        assert_eq!(
            &idx[offsets + 8..offsets + 16],
            &0x1_0000_0000u64.to_be_bytes()
        );
        assert_eq!(idx.len(), offsets + 16 + 20 + 20);
    }
}

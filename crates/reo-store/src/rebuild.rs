//! Rebuilding the data chunks a read could not fetch or verify: from the next copy for
//! `replicate`, from the stripe's other chunks and Reed-Solomon parity for `rs`.
//!
//! For `rs`, the chunks every damaged stripe needs are fetched together in one parallel round
//! (merged per device like any read); another round follows only if some of those are unreadable
//! too. Stripes that lost the same columns are then decoded together over packed shards with
//! the cached coefficients of their pattern (see `codec.rs`): a decoder call costs about 190 µs
//! fixed plus about 1 ms per MiB, which made a degraded read CPU-bound; a combination of k
//! shards costs a few multiplications by constants.

use crate::codec;
use crate::error::{Error, Result};
use crate::geometry::{Row, Shape};
use crate::hedge::Hedge;
use crate::location::Location;
use crate::read::{ChunkAt, Fetched, Want};
use crate::scheme::Scheme;
use crate::stats::Stat;
use crate::store::Inner;
use reo_media::AlignedBuf;

/// Where a fetched chunk is: (fetch round, run buffer, offset in it); round 0 is the read's own.
type Piece = (usize, usize, usize);
/// A column of a damaged stripe: whether it was tried, and its chunk if fetched and verified.
type Column = (bool, Option<Piece>);

impl Inner {
    /// Rebuilds the data chunks `missing` (indexes into `want`) that pass 1 (`first`: its run
    /// buffers and what they hold) could not read or verify, from copies or parity. Pass 1 also
    /// fetched the `extra` (row, stripe, column) chunks, after the wanted ones. Returns the
    /// bodies in `missing` order. Its own fetches hedge as `hedge` says (`hedge.rs`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rebuild(
        &self,
        loc: &Location,
        shape: &Shape,
        rows: &[Row],
        want: &[Want],
        extra: &[(usize, usize, usize)],
        first: (&[AlignedBuf], &Fetched),
        missing: &[usize],
        hedge: &Hedge,
    ) -> Result<Vec<Vec<u8>>> {
        let g = shape.geom;
        let lost = |i: usize, why: &str| {
            let at = want[i].0;
            Error::Corrupt { seq: loc.seq, detail: format!("chunk {} on device {}: {why}", at.index, at.device) }
        };
        match loc.scheme {
            Scheme::None(_) => Err(lost(missing[0], "unreadable and the scheme has no redundancy")),
            Scheme::Replicate(r) => {
                let mut out: Vec<Option<Vec<u8>>> = vec![None; missing.len()];
                for copy in 1..r as usize {
                    let todo: Vec<usize> = (0..missing.len()).filter(|&m| out[m].is_none()).collect();
                    if todo.is_empty() {
                        break;
                    }
                    let others: Vec<ChunkAt> = todo
                        .iter()
                        .map(|&m| {
                            let (_, ri, j) = want[missing[m]];
                            self.chunk_at(loc, shape, &rows[ri], j / g.data, copy)
                        })
                        .collect();
                    let (bufs, found) = self.fetch(loc, &others, hedge);
                    for (t, &m) in todo.iter().enumerate() {
                        if let Some((run, off)) = found[t] {
                            let body = rows[want[missing[m]].1].body();
                            out[m] = Some(bufs[run][off..off + body].to_vec());
                            self.stats.add(Stat::ReconstructedChunks, 1);
                        }
                    }
                    for b in bufs {
                        self.bufs.give(b);
                    }
                }
                out.into_iter()
                    .enumerate()
                    .map(|(m, o)| o.ok_or_else(|| lost(missing[m], "every copy is unreadable")))
                    .collect()
            }
            Scheme::Rs { k, p } => {
                let (k, p) = (k as usize, p as usize);
                let mut rounds: Vec<Vec<AlignedBuf>> = Vec::new();
                let r = self.rebuild_rs(loc, shape, rows, (want, extra), first, missing, (k, p), &mut rounds, hedge);
                for b in rounds.into_iter().flatten() {
                    self.bufs.give(b);
                }
                r.map_err(|(i, why)| lost(i, &why))
            }
        }
    }

    /// [`Inner::rebuild`] for `rs(k, p)`; the buffers of extra fetch rounds go into `rounds`.
    /// An error names the `want` index of a chunk that cannot be rebuilt and why.
    #[allow(clippy::too_many_arguments)]
    fn rebuild_rs(
        &self,
        loc: &Location,
        shape: &Shape,
        rows: &[Row],
        (want, extra): (&[Want], &[(usize, usize, usize)]),
        first: (&[AlignedBuf], &Fetched),
        missing: &[usize],
        (k, p): (usize, usize),
        rounds: &mut Vec<Vec<AlignedBuf>>,
        hedge: &Hedge,
    ) -> std::result::Result<Vec<Vec<u8>>, (usize, String)> {
        let width = shape.geom.width;
        let data = shape.geom.data;
        // Every damaged stripe, (row, stripe) → its columns, with the first missing chunk of it.
        let mut stripes: Vec<((usize, usize), Vec<Column>)> = Vec::new();
        let stripe_of = |i: usize| (want[i].1, want[i].2 / data);
        for &i in missing {
            if stripes.last().is_none_or(|(key, _)| *key != stripe_of(i))
                && !stripes.iter().any(|(key, _)| *key == stripe_of(i))
            {
                stripes.push((stripe_of(i), vec![(false, None); width]));
            }
        }
        for (i, w) in want.iter().enumerate() {
            if let Some((_, cols)) = stripes.iter_mut().find(|(key, _)| *key == stripe_of(i)) {
                cols[w.2 % data] = (true, first.1[i].map(|(run, off)| (0, run, off)));
            }
        }
        for (e, &(ri, s, c)) in extra.iter().enumerate() {
            if let Some((_, cols)) = stripes.iter_mut().find(|(key, _)| *key == (ri, s)) {
                cols[c] = (true, first.1[want.len() + e].map(|(run, off)| (0, run, off)));
            }
        }
        // Fetch rounds: each stripe short of k pieces asks for as many untried columns (healthy
        // and prompt devices first) as it lacks.
        loop {
            let mut ask: Vec<(usize, usize)> = Vec::new(); // (stripe, column)
            for (si, ((ri, s), cols)) in stripes.iter().enumerate() {
                let have = cols.iter().filter(|c| c.1.is_some()).count();
                if have >= k {
                    continue;
                }
                let mut untried: Vec<usize> = (0..width).filter(|&c| !cols[c].0).collect();
                untried.sort_by_key(|&c| {
                    self.avoid(shape.device_of(loc.band, &rows[*ri], *s, c, loc.device), loc.seq, hedge)
                });
                ask.extend(untried.into_iter().take(k - have).map(|c| (si, c)));
            }
            if ask.is_empty() {
                break;
            }
            let chunks: Vec<ChunkAt> = ask
                .iter()
                .map(|&(si, c)| {
                    let (ri, s) = stripes[si].0;
                    self.chunk_at(loc, shape, &rows[ri], s, c)
                })
                .collect();
            let (bufs, found) = self.fetch(loc, &chunks, hedge);
            rounds.push(bufs);
            for (t, &(si, c)) in ask.iter().enumerate() {
                stripes[si].1[c] = (true, found[t].map(|(run, off)| (rounds.len(), run, off)));
            }
        }
        // Group the stripes by the k columns they decode from.
        let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new(); // (columns, stripes)
        for (si, ((ri, s), cols)) in stripes.iter().enumerate() {
            let from: Vec<usize> = (0..width).filter(|&c| cols[c].1.is_some()).take(k).collect();
            if from.len() < k {
                let i = missing.iter().copied().find(|&i| stripe_of(i) == (*ri, *s)).expect("a damaged stripe");
                return Err((i, format!("more than {p} chunks of its stripe are unreadable")));
            }
            match groups.iter_mut().find(|(c, _)| *c == from) {
                Some((_, members)) => members.push(si),
                None => groups.push((from, vec![si])),
            }
        }
        let piece = |(round, run, off): Piece, len: usize| -> &[u8] {
            let bufs = if round == 0 { first.0 } else { &rounds[round - 1][..] };
            &bufs[run][off..off + len]
        };
        let mut out: Vec<Vec<u8>> = vec![Vec::new(); missing.len()];
        for (from, members) in &groups {
            // Segment of each member stripe in the packed shards.
            let mut at = Vec::with_capacity(members.len());
            let mut total = 0;
            for &si in members {
                at.push(total);
                total += codec::padded(rows[stripes[si].0 .0].body());
            }
            let mut packed: Vec<AlignedBuf> = from.iter().map(|_| self.bufs.take(total)).collect();
            for (buf, &c) in packed.iter_mut().zip(from) {
                for (&si, &a) in members.iter().zip(&at) {
                    let body = rows[stripes[si].0 .0].body();
                    let src = piece(stripes[si].1[c].1.expect("a decoding column"), body);
                    codec::pack(&mut buf[a..a + codec::padded(body)], src);
                }
            }
            // The data columns to restore: those some member stripe misses.
            let targets: Vec<usize> =
                (0..data).filter(|c| !from.contains(c) && members.iter().any(|&si| stripes[si].1[*c].0)).collect();
            let mut restored: Vec<AlignedBuf> = targets.iter().map(|_| self.bufs.take(total)).collect();
            let ok = {
                let shards: Vec<&[u8]> = packed.iter().map(|b| &b[..total]).collect();
                let mut outs: Vec<(usize, &mut [u8])> =
                    targets.iter().zip(restored.iter_mut()).map(|(&c, b)| (c, &mut b[..total])).collect();
                codec::decode_packed(k, p, from, &shards, &mut outs)
            };
            let mut result = Ok(());
            if ok {
                for (&si, &a) in members.iter().zip(&at) {
                    let body = rows[stripes[si].0 .0].body();
                    for (m, &i) in missing.iter().enumerate().filter(|(_, &i)| stripe_of(i) == stripes[si].0) {
                        let t = targets.iter().position(|&c| c == want[i].2 % data).expect("a target column");
                        let mut b = vec![0u8; body];
                        codec::unpack(&mut b, &restored[t][a..a + codec::padded(body)]);
                        out[m] = b;
                        self.stats.add(Stat::ReconstructedChunks, 1);
                    }
                }
            } else {
                let i = missing.iter().copied().find(|&i| stripe_of(i) == stripes[members[0]].0).expect("damaged");
                result = Err((i, format!("more than {p} chunks of its stripe are unreadable")));
            }
            for b in packed.into_iter().chain(restored) {
                self.bufs.give(b);
            }
            result?;
        }
        Ok(out)
    }
}

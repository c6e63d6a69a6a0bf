//! The ring a consumer shares with the peer's producers: its posted receives and its
//! completions. The consumer posts receives (one writer); producers claim them (a CAS on the
//! head) and publish completions into slots they claim with a fetch-add, each slot carrying the
//! round it belongs to; the consumer takes completions in slot order and hands each slot back.
//! Only atomics are shared, through the concurrency facade, so loom checks the protocol.

use super::Mapping;
use dpakit_abi::soft::limits::MAX_IMM_DATA_LEN;
use dpakit_sync::{AtomicU64, Ordering, fence};

/// A posted receive: where the data goes and how much fits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Post {
    pub offset: u64,
    pub capacity: u64,
    pub task: u32,
    pub _pad: u32,
}

/// What a completion says: which receive, how much data, from whom, the immediate data.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Done {
    pub task: u32,
    pub producer: u32,
    pub len: u64,
    pub imm_len: u32,
    pub imm: [u8; MAX_IMM_DATA_LEN],
}

/// A completion slot.
#[repr(C)]
struct Comp {
    /// Its round: `index` while free for producers, `index + 1` once written.
    seq: AtomicU64,
    done: Done,
}

/// The head of the region; each counter on its own cache line. The counters live in memory the
/// peer can write: they count modulo 2^64 (a multiple of every depth), never overflowing.
#[repr(C)]
struct Header {
    /// Posted receives claimed by producers.
    post_head: Line,
    /// Posted receives written by the consumer.
    post_tail: Line,
    /// Completion slots claimed by producers.
    comp_tail: Line,
    /// 1 while the consumer runs.
    alive: Line,
    /// 1 while the consumer may sleep: producers wake it after publishing. A busy consumer
    /// leaves it 0 and is never sent a wake-up (no system call per message).
    sleeping: Line,
}

#[repr(C, align(64))]
struct Line(AtomicU64);

/// What a producer's claim found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The receive is this producer's to fill.
    Got(Post),
    /// Nothing posted.
    Empty,
    /// The next posted receive has only this much room: the send is too large (the receive
    /// stays posted).
    TooLarge(u64),
}

/// A completion slot that never came back (a consumer breaking the rules, or dead).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stall {
    /// The consumer stopped (or `gone` said so).
    Gone,
    /// The slot was not free: the consumer broke the protocol.
    Stuck,
}

/// A consumer's ring region over `mem` (a shared mapping, or heap memory in the model).
pub(crate) struct Ring {
    mem: Mapping,
    depth: u64,
}

impl Ring {
    /// Bytes of a ring of `depth` (a power of two) receives.
    pub(crate) fn bytes(depth: u64) -> usize {
        std::mem::size_of::<Header>()
            + depth as usize * (std::mem::size_of::<Post>() + std::mem::size_of::<Comp>())
    }

    /// [`Ring::bytes`] for a depth a peer announced: `None` where the size does not fit in
    /// the address space (a wrapped size would map less than the ring indexes).
    pub(crate) fn checked_bytes(depth: u64) -> Option<usize> {
        usize::try_from(depth)
            .ok()?
            .checked_mul(std::mem::size_of::<Post>() + std::mem::size_of::<Comp>())?
            .checked_add(std::mem::size_of::<Header>())
    }

    /// The consumer's side: lays a fresh ring out in `mem` (at least `bytes(depth)` long).
    pub(crate) fn create(mem: Mapping, depth: u64) -> Ring {
        assert!(mem.len >= Self::bytes(depth) && depth.is_power_of_two());
        let ring = Ring { mem, depth };
        // SAFETY: the region is ours alone until it is announced; each object is written in
        // place at its aligned offset inside it.
        unsafe {
            ring.mem.ptr.cast::<Header>().write(Header {
                post_head: Line(AtomicU64::new(0)),
                post_tail: Line(AtomicU64::new(0)),
                comp_tail: Line(AtomicU64::new(0)),
                alive: Line(AtomicU64::new(1)),
                sleeping: Line(AtomicU64::new(0)),
            });
            for i in 0..depth {
                ring.comp_ptr(i).write(Comp {
                    seq: AtomicU64::new(i),
                    done: Done {
                        task: 0,
                        producer: 0,
                        len: 0,
                        imm_len: 0,
                        imm: [0; MAX_IMM_DATA_LEN],
                    },
                });
            }
        }
        ring
    }

    /// A producer's side: the ring a consumer laid out in `mem` (size checked by the caller).
    pub(crate) fn attach(mem: Mapping, depth: u64) -> Ring {
        Ring { mem, depth }
    }

    fn header(&self) -> &Header {
        // SAFETY: the region starts with a Header (laid out by `create`; size checked).
        unsafe { &*self.mem.ptr.cast::<Header>() }
    }

    fn post_ptr(&self, i: u64) -> *mut Post {
        let base = std::mem::size_of::<Header>();
        // SAFETY: `i % depth` indexes the post array inside the region.
        unsafe {
            self.mem
                .ptr
                .add(base)
                .cast::<Post>()
                .add((i % self.depth) as usize)
        }
    }

    fn comp_ptr(&self, i: u64) -> *mut Comp {
        let base =
            std::mem::size_of::<Header>() + self.depth as usize * std::mem::size_of::<Post>();
        // SAFETY: `i % depth` indexes the completion array inside the region.
        unsafe {
            self.mem
                .ptr
                .add(base)
                .cast::<Comp>()
                .add((i % self.depth) as usize)
        }
    }

    fn comp(&self, i: u64) -> &Comp {
        // SAFETY: a slot laid out by `create`; its `seq` is only ever accessed atomically.
        unsafe { &*self.comp_ptr(i) }
    }

    /// Bytes of the region the ring lives in.
    pub(crate) fn len(&self) -> usize {
        self.mem.len
    }

    /// Whether the consumer runs.
    pub(crate) fn alive(&self) -> bool {
        self.header().alive.0.load(Ordering::Acquire) != 0
    }

    /// The consumer stops: producers see it gone.
    pub(crate) fn stop(&self) {
        self.header().alive.0.store(0, Ordering::Release);
    }

    /// Consumer, before it may sleep: from now on producers wake it. The caller looks at the
    /// ring after this (`ready`): with the fences here and in [`wants_wake`](Self::wants_wake),
    /// either it sees a completion published meanwhile or its producer sees the flag.
    pub(crate) fn sleep(&self) {
        self.header().sleeping.0.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// Consumer, awake: producers need not wake it.
    pub(crate) fn awake(&self) {
        self.header().sleeping.0.store(0, Ordering::Relaxed);
    }

    /// Producer, after publishing a completion: whether the consumer asked to be woken.
    pub(crate) fn wants_wake(&self) -> bool {
        fence(Ordering::SeqCst);
        self.header().sleeping.0.load(Ordering::Relaxed) != 0
    }

    /// Consumer: posts a receive. At most `depth` receives may be outstanding (posted and not
    /// taken back through `next`), which the consumer's task pool guarantees.
    pub(crate) fn post(&self, post: Post) {
        let h = self.header();
        let tail = h.post_tail.0.load(Ordering::Relaxed);
        // SAFETY: the slot at `tail` is free: its previous receive was claimed and completed
        // (at most `depth` outstanding), and a producer reads a post before it completes.
        unsafe { self.post_ptr(tail).write(post) };
        h.post_tail.0.store(tail.wrapping_add(1), Ordering::Release);
    }

    /// Producer: claims the next posted receive for `len` bytes.
    pub(crate) fn claim(&self, len: u64) -> Claim {
        let h = self.header();
        loop {
            let head = h.post_head.0.load(Ordering::Acquire);
            if head == h.post_tail.0.load(Ordering::Acquire) {
                return Claim::Empty;
            }
            // SAFETY: a posted slot (head < tail, acquired); it is not rewritten before the
            // receive it describes completes, which needs this claim first.
            let post = unsafe { self.post_ptr(head).read() };
            if len > post.capacity {
                return Claim::TooLarge(post.capacity);
            }
            if h.post_head
                .0
                .compare_exchange(
                    head,
                    head.wrapping_add(1),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                return Claim::Got(post);
            }
        }
    }

    /// Producer: publishes a completion for a claimed receive, without waiting. A consumer
    /// keeping the rules always has the slot free: it posts a receive only after taking the
    /// completion `depth` slots back (at most `depth` receives outstanding), and that take is
    /// ordered before the post this producer claimed, or before the claims of the producers
    /// whose slot counts it follows. A slot still taken is a consumer breaking the protocol
    /// (or one that stopped: `gone`), never one to wait for: a wait here would let the peer
    /// hold this thread, and every other peer it serves.
    pub(crate) fn complete(&self, done: Done, gone: impl Fn() -> bool) -> Result<(), Stall> {
        let s = self.header().comp_tail.0.fetch_add(1, Ordering::AcqRel);
        let comp = self.comp(s);
        if comp.seq.load(Ordering::Acquire) != s {
            return Err(if !self.alive() || gone() {
                Stall::Gone
            } else {
                Stall::Stuck
            });
        }
        // SAFETY: the slot is ours (seq == s, acquired) until we publish it below.
        unsafe { (&raw mut (*self.comp_ptr(s)).done).write(done) };
        comp.seq.store(s.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Consumer: the completion in slot `head` (the count taken so far), if written; the slot
    /// goes back to producers.
    pub(crate) fn next(&self, head: u64) -> Option<Done> {
        let comp = self.comp(head);
        if comp.seq.load(Ordering::Acquire) != head + 1 {
            return None;
        }
        // SAFETY: the producer finished writing the slot (seq = head + 1, acquired) and no one
        // writes it again until we hand it back below.
        let done = unsafe { (&raw const (*self.comp_ptr(head)).done).read() };
        comp.seq.store(head + self.depth, Ordering::Release);
        Some(done)
    }

    /// Consumer: whether `next(head)` has a completion.
    pub(crate) fn ready(&self, head: u64) -> bool {
        self.comp(head).seq.load(Ordering::Acquire) == head + 1
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // In the model the atomics are loom objects in heap memory: end their lives. Shared
        // mappings hold plain atomics another process may still use; nothing to drop there.
        if self.mem.is_heap() {
            // SAFETY: laid out by `create` (heap rings are only made that way), dropped once.
            unsafe {
                std::ptr::drop_in_place(self.mem.ptr.cast::<Header>());
                for i in 0..self.depth {
                    std::ptr::drop_in_place(self.comp_ptr(i));
                }
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom {
    use super::*;
    use ::loom::sync::Arc;

    fn done(task: u32, producer: u32) -> Done {
        Done {
            task,
            producer,
            len: 1,
            imm_len: 0,
            imm: [0; MAX_IMM_DATA_LEN],
        }
    }

    /// Two producers race for two posted receives: each receive is claimed once, and the
    /// consumer takes two completions, one per receive, whatever the interleaving.
    #[test]
    fn two_producers_claim_each_receive_once() {
        ::loom::model(|| {
            let ring = Arc::new(Ring::create(Mapping::heap(Ring::bytes(2)), 2));
            for task in 0..2 {
                ring.post(Post {
                    offset: u64::from(task) * 8,
                    capacity: 8,
                    task,
                    _pad: 0,
                });
            }
            let producers: Vec<_> = (0..2)
                .map(|k| {
                    let ring = ring.clone();
                    ::loom::thread::spawn(move || {
                        let Claim::Got(post) = ring.claim(1) else {
                            panic!("two receives for two producers");
                        };
                        ring.complete(done(post.task, k), || false).unwrap();
                    })
                })
                .collect();
            let mut got = Vec::new();
            while got.len() < 2 {
                match ring.next(got.len() as u64) {
                    Some(d) => got.push(d),
                    None => ::loom::thread::yield_now(),
                }
            }
            for p in producers {
                p.join().unwrap();
            }
            got.sort_by_key(|d| d.task);
            assert_eq!(got.iter().map(|d| d.task).collect::<Vec<_>>(), [0, 1]);
            let mut by = got.iter().map(|d| d.producer).collect::<Vec<_>>();
            by.sort();
            assert_eq!(by, [0, 1]);
            assert_eq!(ring.claim(1), Claim::Empty);
        });
    }

    /// A consumer going to sleep and a producer publishing at the same time: either the
    /// consumer's last look finds the completion, or the producer sees it asleep and wakes it.
    /// No interleaving loses the message.
    #[test]
    fn a_sleeping_consumer_is_never_missed() {
        ::loom::model(|| {
            let ring = Arc::new(Ring::create(Mapping::heap(Ring::bytes(2)), 2));
            ring.post(Post {
                offset: 0,
                capacity: 8,
                task: 0,
                _pad: 0,
            });
            let producer = {
                let ring = ring.clone();
                ::loom::thread::spawn(move || {
                    let Claim::Got(post) = ring.claim(1) else {
                        panic!("a receive is posted");
                    };
                    ring.complete(done(post.task, 0), || false).unwrap();
                    ring.wants_wake()
                })
            };
            ring.sleep();
            let saw_it = ring.ready(0);
            let woke = producer.join().unwrap();
            assert!(
                saw_it || woke,
                "the completion was published unseen and unsignalled"
            );
        });
    }

    /// One producer sends three messages through a ring of depth 2 while the consumer takes
    /// each completion and posts its receive again: slots wrap, order holds.
    #[test]
    fn slots_wrap_in_order() {
        ::loom::model(|| {
            let ring = Arc::new(Ring::create(Mapping::heap(Ring::bytes(2)), 2));
            for task in 0..2 {
                ring.post(Post {
                    offset: 0,
                    capacity: 8,
                    task,
                    _pad: 0,
                });
            }
            let producer = {
                let ring = ring.clone();
                ::loom::thread::spawn(move || {
                    for n in 0..3u32 {
                        let post = loop {
                            match ring.claim(1) {
                                Claim::Got(p) => break p,
                                Claim::Empty => ::loom::thread::yield_now(),
                                Claim::TooLarge(_) => panic!("every receive fits"),
                            }
                        };
                        let mut d = done(post.task, 0);
                        d.len = u64::from(n);
                        ring.complete(d, || false).unwrap();
                    }
                })
            };
            let mut lens = Vec::new();
            while lens.len() < 3 {
                match ring.next(lens.len() as u64) {
                    Some(d) => {
                        lens.push(d.len);
                        ring.post(Post {
                            offset: 0,
                            capacity: 8,
                            task: d.task,
                            _pad: 0,
                        });
                    }
                    None => ::loom::thread::yield_now(),
                }
            }
            producer.join().unwrap();
            assert_eq!(lens, [0, 1, 2]);
        });
    }
}

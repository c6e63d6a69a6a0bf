//! DMA allocates nothing once warm: memcpy tasks submitted and completed through the safe API
//! (and so through DOCA's C API and the soft device's engine), one at a time and a pool's worth
//! at once, their completions to a callback or taken as values, with a counting global
//! allocator.

#[path = "support/counting.rs"]
mod counting;

use counting::allocations;
use dpakit::ErrorCode;
use dpakit::buf::BufInventory;
use dpakit::dev::Dev;
use dpakit::dma::Dma;
use dpakit::mmap::Mmap;
use dpakit::pe::Pe;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

fn main() {
    counting::run(&[
        ("memcpy_tasks_allocate_nothing_after_warm_up", || {
            memcpy_tasks_allocate_nothing_after_warm_up(false)
        }),
        (
            "pulled_memcpy_completions_allocate_nothing_after_warm_up",
            || memcpy_tasks_allocate_nothing_after_warm_up(true),
        ),
    ]);
}

const TASKS: usize = 8;
const BLOCK: usize = 4096;

fn memcpy_tasks_allocate_nothing_after_warm_up(pulled: bool) {
    let dev = Dev::open_first(|d| d.dma_cap_task_memcpy_is_supported().is_ok()).unwrap();
    let pe = Pe::new().unwrap();
    let mut mmaps = [
        Mmap::alloc(TASKS * BLOCK).unwrap(),
        Mmap::alloc(TASKS * BLOCK).unwrap(),
    ];
    mmaps[0].as_mut_slice().unwrap().fill(0x11);
    for m in &mut mmaps {
        m.add_dev(&dev).unwrap();
        m.start().unwrap();
    }
    let [src, dst] = &mmaps;
    let inv = BufInventory::new(2 * TASKS).unwrap();
    let at = |m: &Mmap, i: usize| m.range().0.wrapping_add(i * BLOCK);
    let pairs: Vec<_> = (0..TASKS)
        .map(|i| {
            (
                inv.buf_get_by_data(src, at(src, i), BLOCK).unwrap(),
                inv.buf_get_by_addr(dst, at(dst, i), BLOCK).unwrap(),
            )
        })
        .collect();
    let done = Rc::new(Cell::new(0u64));
    let d = done.clone();
    let builder = Dma::builder(&dev, &pe).num_tasks(TASKS as u32);
    let dma = if pulled {
        builder.pull_completions()
    } else {
        builder.on_complete(move |c| {
            assert_eq!(c.status, ErrorCode::Success);
            d.set(d.get() + 1);
        })
    }
    .start()
    .unwrap();

    // `rounds` rounds of `width` tasks each, every destination emptied before its copy.
    let run = |rounds: u64, width: usize| {
        for _ in 0..rounds {
            let want = done.get() + width as u64;
            for (i, (from, to)) in pairs.iter().take(width).enumerate() {
                to.reset_data_len().unwrap();
                dma.memcpy(from, to, i as u64).unwrap();
            }
            while done.get() < want {
                if pulled {
                    let c = dma
                        .next_completion(Duration::from_secs(10))
                        .unwrap()
                        .unwrap();
                    assert_eq!(c.status, ErrorCode::Success);
                    done.set(done.get() + 1);
                } else {
                    pe.progress();
                }
            }
        }
    };
    run(1_000, 1);
    run(200, TASKS);
    let before = allocations();
    run(10_000, 1);
    run(2_000, TASKS);
    assert_eq!(allocations() - before, 0, "memcpy tasks allocate");
    drop(dma);
}

import CMalloc
#if canImport(Glibc)
import Glibc
#endif

/// Process-wide allocator settings for a long-running pipeline.
///
/// Every batch allocates and frees megabytes (inputs, decoded payloads, outputs) on
/// several threads. With glibc's defaults the per-thread heaps give that memory back and
/// take it again batch after batch: about two `mprotect` calls and fresh zeroed pages per
/// record in the full pipeline. Keeping up to 64 MiB of free memory per heap and growing
/// heaps 16 MiB at a time removes that churn.
///
/// Since every heap keeps that much, the number of heaps is capped at one per core (glibc's
/// default is eight per core): threads beyond it share one, and a thread that only reads
/// input (the line reader, the source) adds no heap of its own to the peak memory. Measured
/// on the stdin pipeline, 2 cores: 117 against 147 MiB peak RSS, CPU within the noise
/// (docs/benchmarks.md). `MALLOC_TRIM_THRESHOLD_`, `MALLOC_TOP_PAD_` and
/// `MALLOC_ARENA_MAX` in the environment still win.
enum MallocTuning {
    static func apply() {
        #if canImport(Glibc)
        if getenv("MALLOC_TRIM_THRESHOLD_") == nil { _ = mallopt(M_TRIM_THRESHOLD, 64 << 20) }
        if getenv("MALLOC_TOP_PAD_") == nil { _ = mallopt(M_TOP_PAD, 16 << 20) }
        if getenv("MALLOC_ARENA_MAX") == nil {
            _ = mallopt(M_ARENA_MAX, Int32(clamping: max(2, sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
        }
        #endif
    }
}

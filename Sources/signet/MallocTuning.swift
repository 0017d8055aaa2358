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
/// heaps 16 MiB at a time removes that churn. `MALLOC_TRIM_THRESHOLD_` and
/// `MALLOC_TOP_PAD_` in the environment still win.
enum MallocTuning {
    static func apply() {
        #if canImport(Glibc)
        if getenv("MALLOC_TRIM_THRESHOLD_") == nil { _ = mallopt(M_TRIM_THRESHOLD, 64 << 20) }
        if getenv("MALLOC_TOP_PAD_") == nil { _ = mallopt(M_TOP_PAD, 16 << 20) }
        #endif
    }
}

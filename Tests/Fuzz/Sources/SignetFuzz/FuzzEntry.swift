/// libFuzzer's entry point: called once per input, on one thread. libFuzzer provides `main`
/// (the target is built with `-sanitize=fuzzer -parse-as-library`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size > 0 else { return 0 }
    FuzzHarness.shared.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

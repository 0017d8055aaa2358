/// libFuzzer's entry point: called once per input, on one thread (main.swift hands it to
/// libFuzzer's driver).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size > 0 else { return 0 }
    FuzzHarness.shared.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

import CLibFuzzer
import Foundation

// SwiftPM links every executable with its own entry point, so libFuzzer's `main` is not
// used: this one hands the command line to libFuzzer's driver, which parses the usual flags
// (-max_total_time, -artifact_prefix, corpus directories, single files to replay).
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzTestOneInput(data, size) })

import AppStoreModels
import SignetCore

extension JSONText {
    /// `"key": <milliseconds>` when the timestamp is non-nil (Apple's date encoding).
    mutating func field(_ name: String, _ value: AppleTimestamp?) {
        field(name, value?.millisecondsSince1970)
    }
}

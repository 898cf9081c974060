import CALSA
import FoundationEssentials
import Glibc

/// What ALSA offers to capture from: the PCM names its configuration defines (as `arecord -L`
/// lists them) and the sound cards present (as `arecord -l`).
public enum CaptureDevices {
    public struct PCM: Sendable, Equatable {
        /// What to pass to `-D` / `device =`.
        public var name: String
        /// ALSA's description, lines joined.
        public var description: String
    }

    public struct Card: Sendable, Equatable {
        public var index: Int
        /// The short id (`hw:CARD=id`).
        public var id: String
        public var name: String
    }

    /// PCMs that can capture (ALSA's hints whose IOID is not "Output"), in ALSA's order.
    public static func pcms() -> [PCM] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        func field(_ hint: UnsafeMutableRawPointer, _ id: String) -> String? {
            guard let p = snd_device_name_get_hint(hint, id) else { return nil }
            defer { free(p) }
            return String(cString: p)
        }
        var out: [PCM] = []
        var i = 0
        while let hint = hints[i] {
            i += 1
            guard let name = field(hint, "NAME"), field(hint, "IOID") != "Output" else { continue }
            let description = (field(hint, "DESC") ?? "").split(separator: "\n").joined(separator: ", ")
            out.append(PCM(name: name, description: description))
        }
        return out
    }

    /// Sound cards present, in index order.
    public static func cards() -> [Card] {
        var out: [Card] = []
        var index: Int32 = -1
        while snd_card_next(&index) == 0, index >= 0 {
            var name: UnsafeMutablePointer<CChar>?
            var control: OpaquePointer?
            var id = "card\(index)"
            if snd_ctl_open(&control, "hw:\(index)", 0) == 0, let control {
                var info: OpaquePointer?
                snd_ctl_card_info_malloc(&info)
                if snd_ctl_card_info(control, info) == 0, let p = snd_ctl_card_info_get_id(info) { id = String(cString: p) }
                snd_ctl_card_info_free(info)
                snd_ctl_close(control)
            }
            snd_card_get_name(index, &name)
            out.append(Card(index: Int(index), id: id, name: name.map { String(cString: $0) } ?? "?"))
            free(name)
        }
        return out
    }
}

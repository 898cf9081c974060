import CMosquitto
import FoundationEssentials
import Glibc

/// libmosquitto's functions, loaded with `dlopen` the first time an MQTT client is made.
///
/// Linked at build time, libmosquitto brought OpenSSL into every harkd, uplink or not: 1.4 MB
/// resident for libcrypto alone. Loaded on demand, a harkd without `mqtt-url` maps neither.
struct LibMosquitto {
    typealias Callback = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32) -> Void

    let libInit: @convention(c) () -> Int32
    let new: @convention(c) (UnsafePointer<CChar>?, Bool, UnsafeMutableRawPointer?) -> OpaquePointer?
    let destroy: @convention(c) (OpaquePointer?) -> Void
    let userDataSet: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void
    let intOption: @convention(c) (OpaquePointer?, mosq_opt_t, Int32) -> Int32
    let usernamePasswordSet: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    let tlsSet: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
                                UnsafePointer<CChar>?, OpaquePointer?) -> Int32
    let willSet: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32, UnsafeRawPointer?, Int32, Bool) -> Int32
    let connectCallbackSet: @convention(c) (OpaquePointer?, Callback?) -> Void
    let disconnectCallbackSet: @convention(c) (OpaquePointer?, Callback?) -> Void
    let publishCallbackSet: @convention(c) (OpaquePointer?, Callback?) -> Void
    let connect: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32, Int32) -> Int32
    let publish: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafePointer<CChar>?, Int32, UnsafeRawPointer?,
                                 Int32, Bool) -> Int32
    let loop: @convention(c) (OpaquePointer?, Int32, Int32) -> Int32
    let disconnect: @convention(c) (OpaquePointer?) -> Int32
    let strerror: @convention(c) (Int32) -> UnsafePointer<CChar>?
    let connackString: @convention(c) (Int32) -> UnsafePointer<CChar>?

    /// The library, or why it could not be loaded (Debian's package: libmosquitto1).
    static let shared: Result<LibMosquitto, MQTTError> = load()

    private static func load() -> Result<LibMosquitto, MQTTError> {
        guard let handle = dlopen("libmosquitto.so.1", RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(MQTTError(what: "cannot load libmosquitto (apt-get install libmosquitto1): \(why)", code: MOSQ_ERR_NOT_SUPPORTED.rawValue))
        }
        var missing: [String] = []
        func symbol<T>(_ name: String, _: T.Type) -> T? {
            guard let p = dlsym(handle, name) else { missing.append(name); return nil }
            return unsafeBitCast(p, to: T.self)
        }
        let lib = (
            symbol("mosquitto_lib_init", (@convention(c) () -> Int32).self),
            symbol("mosquitto_new", (@convention(c) (UnsafePointer<CChar>?, Bool, UnsafeMutableRawPointer?) -> OpaquePointer?).self),
            symbol("mosquitto_destroy", (@convention(c) (OpaquePointer?) -> Void).self),
            symbol("mosquitto_user_data_set", (@convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void).self),
            symbol("mosquitto_int_option", (@convention(c) (OpaquePointer?, mosq_opt_t, Int32) -> Int32).self),
            symbol("mosquitto_username_pw_set", (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32).self),
            symbol("mosquitto_tls_set", (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
                                                         UnsafePointer<CChar>?, OpaquePointer?) -> Int32).self),
            symbol("mosquitto_will_set", (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32, UnsafeRawPointer?, Int32, Bool) -> Int32).self),
            symbol("mosquitto_connect_callback_set", (@convention(c) (OpaquePointer?, Callback?) -> Void).self),
            symbol("mosquitto_disconnect_callback_set", (@convention(c) (OpaquePointer?, Callback?) -> Void).self),
            symbol("mosquitto_publish_callback_set", (@convention(c) (OpaquePointer?, Callback?) -> Void).self),
            symbol("mosquitto_connect", (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32, Int32) -> Int32).self),
            symbol("mosquitto_publish", (@convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafePointer<CChar>?, Int32,
                                                         UnsafeRawPointer?, Int32, Bool) -> Int32).self),
            symbol("mosquitto_loop", (@convention(c) (OpaquePointer?, Int32, Int32) -> Int32).self),
            symbol("mosquitto_disconnect", (@convention(c) (OpaquePointer?) -> Int32).self),
            symbol("mosquitto_strerror", (@convention(c) (Int32) -> UnsafePointer<CChar>?).self),
            symbol("mosquitto_connack_string", (@convention(c) (Int32) -> UnsafePointer<CChar>?).self)
        )
        guard missing.isEmpty, let a = lib.0, let b = lib.1, let c = lib.2, let d = lib.3, let e = lib.4, let f = lib.5, let g = lib.6,
              let h = lib.7, let i = lib.8, let j = lib.9, let k = lib.10, let l = lib.11, let m = lib.12, let n = lib.13, let o = lib.14,
              let p = lib.15, let q = lib.16 else {
            return .failure(MQTTError(what: "libmosquitto.so.1 lacks \(missing.joined(separator: ", "))", code: MOSQ_ERR_NOT_SUPPORTED.rawValue))
        }
        let loaded = LibMosquitto(libInit: a, new: b, destroy: c, userDataSet: d, intOption: e, usernamePasswordSet: f, tlsSet: g,
                                  willSet: h, connectCallbackSet: i, disconnectCallbackSet: j, publishCallbackSet: k, connect: l,
                                  publish: m, loop: n, disconnect: o, strerror: p, connackString: q)
        _ = loaded.libInit()
        return .success(loaded)
    }

    /// libmosquitto's words for a result code.
    func describe(_ code: Int32) -> String {
        strerror(code).map { String(cString: $0) } ?? "error \(code)"
    }
}

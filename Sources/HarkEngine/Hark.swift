/// Facts about this build of Hark.
public enum Hark {
    /// The release, reported by `hark --version` and the daemon's version banner.
    public static let version = "0.1.0"
}

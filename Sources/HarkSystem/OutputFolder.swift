import Glibc

/// Why a file cannot be made at `path` because of its folder, in words, or nil when the folder
/// is there: what C libraries report as "No such file or directory" or "error while writing to
/// output stream" names the missing folder instead.
public func missingFolder(of path: String) -> String? {
    let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
    let shown = folder.isEmpty ? "/" : folder
    var status = stat()
    guard stat(shown, &status) == 0 else { return "the folder \(shown) does not exist" }
    guard status.st_mode & S_IFMT == S_IFDIR else { return "\(shown) is not a folder" }
    guard access(shown, W_OK) == 0 else { return "the folder \(shown) is not writable" }
    return nil
}

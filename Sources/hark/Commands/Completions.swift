import ArgumentParser

extension CompletionKind {
    /// Audio files hark reads (libsndfile's and raw), and folders: not the logs, pid files and
    /// pictures that sit beside recordings.
    static let audio = CompletionKind.file(extensions: ["wav", "flac", "ogg", "oga", "opus", "mp3", "aiff", "aif", "aifc", "au",
                                                        "caf", "w64", "rf64", "raw", "pcm", "WAV", "FLAC"])
}

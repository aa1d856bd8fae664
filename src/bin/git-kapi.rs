fn main() -> std::process::ExitCode {
    kapi::cli::main()
}

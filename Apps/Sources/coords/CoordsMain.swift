import CoordsCLI

/// The `coords` executable: the commands live in CoordsCLI (tested there); ``CoordsCommand/main(arguments:)``
/// maps usage errors to exit status 1 (docs/CLI.md, "Exit status").
@main
enum CoordsMain {
    static func main() {
        CoordsCommand.start(arguments: Array(CommandLine.arguments.dropFirst()))
    }
}

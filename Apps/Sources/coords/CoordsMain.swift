import ArgumentParser
import CoordsCLI

/// The `coords` executable: the commands live in CoordsCLI (tested there).
@main
struct CoordsMain: AsyncParsableCommand {
    static let configuration = CoordsCommand.configuration
}

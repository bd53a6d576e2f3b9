// How the JVM binding reads from Kotlin (compiled by scripts/jvm.sh with Debian's kotlinc and run
// by the JUnit suite): nullability comes from the binding's annotations, so `nextWake()` is a
// `Long?` and `friends()` a `List<Friend>`; failures are unchecked `CoordsException`s, caught by
// code or class like any Kotlin exception; the app is closed by `use`.
import org.coordscore.Coords
import org.coordscore.CoordsApp
import org.coordscore.CoordsException
import org.coordscore.ErrorCode
import org.coordscore.Keychain
import org.coordscore.Location

/** Opens an app in [directory], befriends a generated identity, seals a fix for both; returns a summary line. */
fun shareOnce(directory: String): String {
    val friend = Coords.generateIdentity()
    CoordsApp.open(directory, Keychain.InMemory(), mapOf("keychain_cost" to "minimum", "durability" to "no_sync")).use { app ->
        val id: String = app.createIdentity("Kotlin", "https://relay.example")
        val added = app.addFriend(Coords.publicKeyB64url(friend.publicKey), "https://relay.example", "Friend", true, true)
        val until: Long? = added.shareUntil                     // nullable: no end
        val wake: Long = app.nextWake() ?: -1L                  // nullable: nothing due
        val fix = Location(47.3769, 8.5417, System.currentTimeMillis())
        val blob = Coords.seal(fix, listOf(app.publicKey(), friend.publicKey))
        val opened = Coords.openBlob(friend.seed, blob)
        val refused = try {
            Coords.openBlob(Coords.generateIdentity().seed, blob)
            "opened"
        } catch (error: CoordsException.WireException) {
            if (error.code() == ErrorCode.NOT_A_RECIPIENT) "refused" else "other ${error.codeName()}"
        }
        return "id=${id.length} friends=${app.friends().size} until=$until wake=${wake > 0} " +
            "lat=${opened.latitude} stranger=$refused closed=${app.isClosed}"
    }
}

fun main(args: Array<String>) {
    println(shareOnce(args.firstOrNull() ?: createTempDir("coords-kotlin").path))
}

import Foundation
import Testing
import Core
import TestSupport
@testable import WebPush

@Suite struct P256KeyTests {
    let folder: TemporaryDirectory
    init() throws { folder = try TemporaryDirectory() }

    /// Runs the openssl CLI and returns the file it wrote.
    func openssl(_ arguments: [String], output name: String) throws -> String {
        let path = folder.file(name)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments + ["-out", path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return path
    }

    @Test func readsTheKeyOpensslEcparamWritesAndItsPKCS8Form() throws {
        // `ecparam -genkey` writes an EC PARAMETERS block before the EC PRIVATE KEY.
        let sec1 = try openssl(["ecparam", "-name", "prime256v1", "-genkey"], output: "sec1.pem")
        #expect(try String(contentsOfFile: sec1, encoding: .utf8).contains("BEGIN EC PARAMETERS"))
        let key = try P256Key(path: sec1)
        #expect(key.isPrivate && key.publicKey.count == 65 && key.publicKey[0] == 0x04)
        let pkcs8 = try key.pem()
        #expect(pkcs8.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try P256Key(pem: pkcs8).publicKey == key.publicKey)
    }

    /// A key file whose public point is stored compressed still gives the uncompressed point a
    /// VAPID header and an aes128gcm header carry.
    @Test func aKeyWithACompressedPointGivesTheUncompressedOne() throws {
        let plain = try openssl(["ecparam", "-name", "prime256v1", "-genkey"], output: "plain.pem")
        let compressed = try openssl(["ec", "-in", plain, "-conv_form", "compressed"], output: "compressed.pem")
        let expected = try P256Key(path: plain).publicKey
        #expect(expected.count == 65 && expected[0] == 0x04)
        #expect(try P256Key(path: compressed).publicKey == expected)
    }

    @Test func refusesOtherCurvesAndKeyTypes() throws {
        let secp384 = try openssl(["ecparam", "-name", "secp384r1", "-genkey"], output: "p384.pem")
        #expect(throws: WebPushError("not an EC P-256 (prime256v1) private key")) { try P256Key(path: secp384) }
        let rsa = try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"], output: "rsa.pem")
        #expect(throws: WebPushError("not an EC P-256 (prime256v1) private key")) { try P256Key(path: rsa) }
        #expect(throws: WebPushError.self) { try P256Key(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        #expect(throws: WebPushError.self) { try P256Key(path: folder.file("missing.pem")) }
    }

    @Test func aNewKeyFileIsPrivateAndNeverOverwritten() throws {
        let path = folder.file("vapid.pem")
        let key = try P256Key.generate()
        try key.write(toNewFile: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try P256Key(path: path).publicKey == key.publicKey)
        #expect(throws: WebPushError.self) { try P256Key.generate().write(toNewFile: path) }
        #expect(try P256Key(path: path).publicKey == key.publicKey)
    }

    @Test func aPrivateKeyGivesBackItsScalarAndAZeroScalarIsRefused() throws {
        let key = try P256Key.generate()
        let scalar = try #require(key.privateKey)
        #expect(try P256Key(privateKey: scalar).publicKey == key.publicKey)
        #expect(try P256Key(publicKey: key.publicKey).privateKey == nil)
        #expect(throws: WebPushError.self) { try P256Key(privateKey: [UInt8](repeating: 0, count: 32)) }
    }
}

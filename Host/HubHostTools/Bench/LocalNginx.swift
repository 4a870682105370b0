import Foundation

/// nginx on a free 127.0.0.1 port with a private configuration in a benchmark's temporary folder
/// (no root needed, no system nginx touched): the static-file yardstick of `bench hub` and the
/// file server of `bench prefetch`.
struct LocalNginx {
    let process: Process
    let port: Int
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts nginx with `httpDirectives` in its http block and `serverDirectives` in its one
    /// server block; stop it with `stop()`.
    static func start(_ nginx: String, folder: String, httpDirectives: String = "", serverDirectives: String) throws -> LocalNginx {
        let port = try PageServingBenchmark.freePort()
        let config = """
            worker_processes 2;
            daemon off;
            pid \(folder)/nginx.pid;
            error_log \(folder)/nginx-error.log;
            events { worker_connections 1024; }
            http {
                access_log off;
                \(httpDirectives)
                client_body_temp_path \(folder)/client;
                proxy_temp_path \(folder)/proxy;
                fastcgi_temp_path \(folder)/fastcgi;
                uwsgi_temp_path \(folder)/uwsgi;
                scgi_temp_path \(folder)/scgi;
                server {
                    listen 127.0.0.1:\(port);
                    \(serverDirectives)
                }
            }
            """
        try config.write(toFile: folder + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", folder, "-c", folder + "/nginx.conf", "-e", folder + "/nginx-error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return LocalNginx(process: process, port: port)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

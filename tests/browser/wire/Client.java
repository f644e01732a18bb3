// Java's own HTTP client (java.net.http) posting a recorded collect body, as a scraper written in
// Java would: java Client.java URL BODYFILE USER_AGENT ORIGIN. Trusts any certificate: the test
// serves one it made itself.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

public class Client {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: Client URL BODYFILE USER_AGENT ORIGIN");
            System.exit(2);
        }
        // The host name is the certificate's own; checking it needs none of this trust.
        System.setProperty("jdk.internal.httpclient.disableHostnameVerification", "true");
        TrustManager[] any = { new X509TrustManager() {
            public void checkClientTrusted(X509Certificate[] c, String a) {}
            public void checkServerTrusted(X509Certificate[] c, String a) {}
            public X509Certificate[] getAcceptedIssuers() { return new X509Certificate[0]; }
        } };
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(null, any, null);
        HttpClient client = HttpClient.newBuilder().sslContext(tls).build();
        HttpRequest req = HttpRequest.newBuilder(URI.create(args[0]))
            .header("User-Agent", args[2])
            .header("Origin", args[3])
            .header("Content-Type", "text/plain;charset=UTF-8")
            .POST(HttpRequest.BodyPublishers.ofByteArray(Files.readAllBytes(Path.of(args[1]))))
            .build();
        HttpResponse<String> res = client.send(req, HttpResponse.BodyHandlers.ofString());
        System.out.println(res.statusCode() + " " + res.body());
    }
}

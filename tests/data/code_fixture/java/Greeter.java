package demo;

public class Greeter {
    public static final String PREFIX = "Hello, ";

    public String greet(String name) {
        return join(PREFIX, name);
    }

    private static String join(String a, String b) {
        return a + b;
    }
}

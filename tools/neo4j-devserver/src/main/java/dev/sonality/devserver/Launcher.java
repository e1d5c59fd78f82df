package dev.sonality.devserver;
public class Launcher { public static void main(String[] a) {} }

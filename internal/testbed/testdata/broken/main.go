package main

func main() { undefinedFunction() }

print("hubhost")
